"""The LangChain Runnable with the real langchain-core package and the real default scorer.

Only the chain's LLM is a stand-in (langchain_core's FakeListChatModel, answering the shipped
example's answer); the groundsense step scores with the real scorer. The framework is
imported by the tests that use it (``integration``), not at collection.
"""

import asyncio

import pytest
from helpers.integration_example import INVENTED, SUPPORTED

from groundsense.errors import InputError

pytestmark = pytest.mark.slow


def prompt():
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_messages(
        [("system", "Answer from these documents only:\n{documents}"), ("human", "{question}")]
    )


def documents(example):
    from langchain_core.documents import Document

    return [Document(page_content=p, metadata={"source": f"passage-{i}"}) for i, p in enumerate(example["passages"])]


def test_invoke_returns_the_report(integration, detector, example, offline):
    from langchain_core.runnables import Runnable

    step = integration.GroundsenseRunnable(detector)
    assert isinstance(step, Runnable)

    report = step.invoke({"question": example["question"], "documents": documents(example),
                          "answer": example["answer"]})
    assert [s.text for s in report.unsupported] == [INVENTED]
    assert report.passing is False and report.score == pytest.approx(2 / 3)
    assert report.grounded_answer == SUPPORTED
    assert report.result.sentences[2].flagged is True  # the full DetectionResult rides along
    assert offline == []


def test_guard_step_after_an_llm_in_an_lcel_chain(integration, detector, example):
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    llm = FakeListChatModel(responses=[example["answer"]])
    chain = (
        RunnablePassthrough.assign(answer=prompt() | llm | StrOutputParser())
        | integration.GroundsenseRunnable(detector)
        | RunnableLambda(lambda report: report.grounded_answer)
    )
    assert chain.invoke({"question": example["question"], "documents": documents(example)}) == SUPPORTED


def test_async_batch_and_a_chat_message_answer(integration, detector, example):
    """Without an output parser the step gets the LLM's AIMessage and checks its text."""
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.runnables import RunnablePassthrough

    llm = FakeListChatModel(responses=[example["answer"], SUPPORTED])
    chain = RunnablePassthrough.assign(answer=prompt() | llm) | integration.GroundsenseRunnable(detector)
    inputs = {"question": example["question"], "documents": documents(example)}

    first = asyncio.run(chain.ainvoke(inputs))
    assert [s.text for s in first.unsupported] == [INVENTED]
    assert [r.passing for r in integration.GroundsenseRunnable(detector).batch([
        {**inputs, "answer": example["answer"]}, {**inputs, "answer": SUPPORTED},
    ])] == [False, True]


def test_bad_input_is_refused(integration, detector, example):
    with pytest.raises(InputError, match="documents"):
        integration.GroundsenseRunnable(detector).invoke({"answer": example["answer"]})
