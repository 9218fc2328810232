from groundsense.inputs.text import chunk_context, join_passages, segment_sentences

TEXT = "Dr. Smith went to Washington.  He met the U.S. president at 3 p.m.\nThen he left!\n\n- one\n- two  "


def test_sentences_index_the_original_string():
    spans = segment_sentences(TEXT)
    assert [s.of(TEXT) for s in spans] == [
        "Dr. Smith went to Washington.", "He met the U.S. president at 3 p.m.", "Then he left!", "- one", "- two",
    ]


def test_blank_text_has_no_sentences():
    assert segment_sentences(" \n\t ") == []


def test_chunk_removal_ranges_tile_the_context():
    for k in (1, 2, 3, 5, 10):
        chunks = chunk_context(TEXT, k)
        assert len(chunks) == min(k, 5)
        assert "".join(c.removal.of(TEXT) for c in chunks) == TEXT
        for c in chunks:
            assert c.content.of(TEXT) == c.content.of(TEXT).strip()
            assert c.removal.start <= c.content.start < c.content.end <= c.removal.end


def test_removing_a_chunk_removes_exactly_its_characters():
    chunks = chunk_context(TEXT, 3)
    middle = chunks[1]
    without = TEXT[: middle.removal.start] + TEXT[middle.removal.end :]
    assert without == "".join(c.removal.of(TEXT) for c in chunks if c.index != 1)
    assert middle.content.of(TEXT) not in without


def test_passages_are_chunks_and_blank_ones_are_skipped():
    context, chunks = join_passages(["First passage.", "   ", "Second one."])
    assert context == "First passage.\n\nSecond one."
    assert [c.content.of(context) for c in chunks] == ["First passage.", "Second one."]
    assert [c.passage for c in chunks] == [0, 2]
    assert "".join(c.removal.of(context) for c in chunks) == context


def test_nul_and_other_separators_end_a_sentence():
    text = "The span is long.\x00It opened in 1937\x00it is orange.\u2028Last one."
    assert [s.of(text) for s in segment_sentences(text)] == [
        "The span is long.", "It opened in 1937", "it is orange.", "Last one.",
    ]


def test_invisible_characters_are_blank_and_never_a_sentence():
    from groundsense.inputs.text import is_blank

    assert is_blank("\u200b\ufeff\x00 \t\u2060") and not is_blank("\u200ba")
    text = "\u200bFirst one. \ufeff\u200b Second one.\u200b"
    assert [s.of(text) for s in segment_sentences(text)] == ["First one.", "Second one."]
    context, chunks = join_passages(["A.", "\u200b\x00", "B."])
    assert [c.passage for c in chunks] == [0, 2]
