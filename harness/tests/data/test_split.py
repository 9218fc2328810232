import pandas as pd

from groundsense_eval.data.split import assign_partition, split_sources


def _table(n_sources=50):
    rows = [{"source_id": f"s{i}", "task": "A" if i % 2 else "B"} for i in range(n_sources) for _ in range(i % 4 + 1)]
    return pd.DataFrame(rows)


def test_sources_are_never_split_and_the_fraction_holds():
    table = _table()
    partition = assign_partition(table, seed=4)
    assert set(partition) == {"dev", "test"}
    assert (table.assign(p=partition).groupby("source_id")["p"].nunique() == 1).all()
    per_source = table.assign(p=partition).drop_duplicates("source_id")
    assert per_source.groupby("task")["p"].apply(lambda p: (p == "dev").sum()).to_dict() == {"A": 15, "B": 15}


def test_split_is_seeded():
    ids = [f"s{i}" for i in range(100)]
    assert split_sources(ids, seed=1) == split_sources(list(reversed(ids)), seed=1)
    assert split_sources(ids, seed=1) != split_sources(ids, seed=2)
    assert sum(v == "dev" for v in split_sources(ids, seed=1).values()) == 60
