"""The MCP server with the real mcp SDK: a real client session over the SDK's in-memory
transport (the JSON-RPC messages and the initialize handshake of a stdio client), and
`groundsense mcp` as a stdio subprocess, the way Claude Desktop starts it. The scoring test runs
the real default scorer, which the server loads itself. The SDK is imported by the tests that use it."""

import os
import sys

import anyio
import pytest
from click.testing import CliRunner
from helpers.integration_example import INVENTED

from groundsense.cli import cli
from groundsense.inputs.validate import EMPTY_ANSWER

TOOL = "check_grounding"


def session(server):
    from mcp import Client

    return Client(server, mode="legacy")  # the initialize handshake, as stdio clients do


def test_the_tool_is_listed_with_its_schema(integration):
    async def listed():
        async with session(integration.create_server()) as client:
            return (await client.list_tools()).tools, client.instructions

    (tool,), instructions = anyio.run(listed)
    assert tool.name == TOOL and TOOL in instructions
    assert "after drafting an answer from retrieved passages and before showing it" in tool.description
    assert tool.input_schema["required"] == ["answer"]
    assert set(tool.input_schema["properties"]) == {"answer", "context", "passages", "question"}
    assert tool.input_schema["additionalProperties"] is False
    assert tool.input_schema["title"] == "check_groundingArguments" and "description" not in tool.input_schema
    assert tool.output_schema["type"] == "object"
    assert tool.annotations.read_only_hint is True


BAD_CALLS = [  # (the server's detector options, the arguments, the message)
    ({}, {"answer": "  ", "passages": ["Some evidence."]}, EMPTY_ANSWER),
    ({}, {"answer": "A claim.", "context": "Evidence.", "passages": ["Evidence."]}, "not both"),
    ({}, {"answer": "A claim.", "passages": ["", " "]}, "the evidence is empty"),
    # an argument the tool does not take, a misspelled question among them, is no silent default
    ({}, {"answer": "A claim.", "context": "Evidence.", "query": "Which?"},
     f"unknown argument 'query': {TOOL} takes answer, context, passages, question"),
    ({}, {"answer": "A claim.", "passages": ["Evidence."], "k": 2}, "unknown argument 'k'"),
]


def test_bad_input_or_a_scorer_that_cannot_load_is_a_tool_error(integration, hub_offline, unloadable_scorer,
                                                                tmp_path):
    from dataclasses import replace

    from groundsense.calibration.calibration import shipped_calibration

    async def called(options, arguments):
        async with session(integration.create_server(options)) as client:
            return await client.call_tool(TOOL, arguments)

    calibration = replace(shipped_calibration("smollm2-135m-instruct", 5), scorer=unloadable_scorer)
    calibration.save(tmp_path / "calibration.json")  # its own: a scorer without one is refused as the server starts
    cannot_load = ({"scorer": unloadable_scorer, "calibration": str(tmp_path / "calibration.json")},
                   {"answer": "A claim.", "context": "Evidence."}, "cannot load scorer")
    for options, arguments, message in [*BAD_CALLS, cannot_load]:
        result = anyio.run(called, options, arguments)
        assert result.is_error is True and result.structured_content is None
        assert message in result.content[0].text and "SUPPORTED" not in result.content[0].text, result.content


def test_the_server_prepares_its_detection_once_for_its_start_and_its_calls(integration, hub_offline,
                                                                           unloadable_scorer, tmp_path, calls_counted):
    """It was prepared as the server started and again by the first call (the files read, the
    weights looked for and the adjudicator made twice). Here the model fails to load, so that
    each call builds again, from the one preparation."""
    from dataclasses import replace

    from groundsense.calibration.calibration import shipped_calibration
    from groundsense.verification import factory

    calibration = replace(shipped_calibration("smollm2-135m-instruct", 5), scorer=unloadable_scorer)
    calibration.save(tmp_path / "calibration.json")
    counts = calls_counted(factory, "prepare_detection")

    async def called_twice():
        options = {"scorer": unloadable_scorer, "calibration": str(tmp_path / "calibration.json")}
        async with session(integration.create_server(options)) as client:
            return [await client.call_tool(TOOL, {"answer": "A claim.", "context": "Evidence."}) for _ in range(2)]

    for result in anyio.run(called_twice):
        assert result.is_error is True and "cannot load scorer" in result.content[0].text, result.content
    assert counts["prepare_detection"] == 1


def test_settings_refused_without_a_model_stop_the_server_before_it_starts(integration, hub_offline, tmp_path):
    from groundsense.errors import GroundsenseError, InputError, ScorerUnavailable

    with pytest.raises(ScorerUnavailable, match="unknown scorer 'no-such-org/no-such-model'"):
        integration.create_server({"scorer": "no-such-org/no-such-model"})
    (tmp_path / "calibration.json").write_text("{}")
    with pytest.raises(InputError, match="it has no 'scorer', 'k', 'stats', 'thresholds'"):
        integration.create_server({"calibration": str(tmp_path / "calibration.json")})
    with pytest.raises(GroundsenseError, match="the detection has no flag threshold for scorer smollm2-135m-instruct"):
        integration.create_server({"precision": "int8", "score": "sensitivity"})  # no calibration ships for int8


@pytest.mark.slow
def test_the_invented_sentence_is_flagged_while_the_server_answers_others(integration, example, offline, monkeypatch,
                                                                        validator_calls):
    """The call scores in a worker thread: while it waits there for the detection lock (held
    here), a listing asked for after it is answered, so the server's event loop is not blocked.
    Were it blocked, the timer frees the lock after 60 s and the order comes out wrong. The
    call's request is checked once."""
    import threading

    from groundsense.integrations import common

    answered, started, report = [], threading.Event(), integration._report
    monkeypatch.setattr(integration, "_report", lambda *args: (started.set(), report(*args))[1])

    async def check_and_list():
        async with session(integration.create_server()) as client:
            refused = await client.call_tool(TOOL, {"answer": " ", "context": "Evidence."})
            assert refused.is_error  # and the same server goes on to score the next call
            validator_calls.clear()

            async def check():
                answered.append(("call", await client.call_tool(TOOL, example)))

            async with anyio.create_task_group() as group:
                common._LOCK.acquire()
                fail_safe = threading.Timer(60, common._LOCK.release)
                fail_safe.start()
                group.start_soon(check)
                assert await anyio.to_thread.run_sync(started.wait, 60)  # the call is in the worker thread
                await client.list_tools(cache_mode="bypass")
                answered.append(("list", None))
                fail_safe.cancel()
                common._LOCK.release()

    anyio.run(check_and_list)
    assert [what for what, _ in answered] == ["list", "call"]
    result = answered[1][1]
    assert result.is_error is False
    sentences = result.structured_content["sentences"]
    assert [s["flagged"] for s in sentences] == [False, False, True] and sentences[2]["text"] == INVENTED
    assert result.structured_content["score_rule"] == "fused"  # the default score
    assert [s["support"]["passage"] for s in sentences[:2]] == [0, 1]
    text = result.content[0].text
    assert text.startswith("Verdict: NOT SUPPORTED") and f'- [2] "{INVENTED}"' in text
    assert offline == []
    assert (validator_calls["check_row"], validator_calls["check_inputs"]) == (1, 1)


@pytest.mark.slow  # the subprocess loads the scorer in the background
def test_groundsense_mcp_serves_a_stdio_client():
    from mcp import Client, StdioServerParameters

    command = StdioServerParameters(command=sys.executable, args=["-m", "groundsense", "--threads", "1", "mcp"],
                                    env=dict(os.environ))  # the SDK passes on only a few variables otherwise

    async def over_stdio():
        async with Client(command) as client:
            tools = (await client.list_tools()).tools
            refused = await client.call_tool(TOOL, {"answer": "", "context": "Evidence."})
            return tools, refused

    tools, refused = anyio.run(over_stdio)
    assert [tool.name for tool in tools] == [TOOL]
    assert refused.is_error is True and EMPTY_ANSWER in refused.content[0].text


def test_without_the_extra_the_command_says_how_to_install_it(monkeypatch):
    for name in ["mcp", *(name for name in sys.modules if name.startswith("mcp."))]:
        monkeypatch.setitem(sys.modules, name, None)  # what a missing package looks like to an import
    monkeypatch.delitem(sys.modules, "groundsense.integrations.mcp", raising=False)  # imported by an earlier test
    assert "mcp " in CliRunner().invoke(cli, ["--help"]).output
    result = CliRunner().invoke(cli, ["mcp"])
    assert result.exit_code == 2 and "pip install 'groundsense[mcp]'" in result.output
