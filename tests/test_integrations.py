"""vaultsearch inside other frameworks: the LlamaIndex retriever run by LlamaIndex's own
query engine with its own mock LLM, and the LangChain retriever in a chain with
langchain-core's fake LLM (no model, no network), over a real index."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import write_files
from vaultsearch import Vault
from vaultsearch.embedding import Embedder

needs_llama_index = pytest.mark.skipif(
    importlib.util.find_spec("llama_index") is None,
    reason="the llama-index extra is not installed: pip install 'vaultsearch[llama-index]'",
)
NOTES = {
    "rivers.md": "# Rivers\n\nThe Danube flows through ten countries into the Black Sea.\n",
    "birds/owls.md": "# Owls\n\nSome intro.\n\n## Hunting\n\nBarn owls hunt at night by sound; see [[rivers]].\n",
    "tax.md": "# Taxes\n\nFile the quarterly VAT return before the end of the month.\n",
}


@pytest.fixture
def indexed(tmp_path: Path, embedder: Embedder) -> tuple[Path, Path]:
    root = write_files(tmp_path / "vault", NOTES)
    with Vault.open(root, index_dir=tmp_path / "index") as vault:
        vault.index()
    return root, tmp_path / "index"


@needs_llama_index
def test_the_retriever_returns_the_vaults_hits_as_nodes(indexed: tuple[Path, Path]) -> None:
    from llama_index.core.schema import QueryBundle

    from vaultsearch.integrations.llama_index import VaultRetriever

    root, index = indexed
    retriever = VaultRetriever(root, index_dir=index, top_k=2, explain=True)
    try:
        nodes = retriever.retrieve(QueryBundle("which birds hunt in the dark"))
        hits = retriever.vault.search("which birds hunt in the dark", top_k=2)
    finally:
        retriever.close()
    assert [n.node.metadata["path"] for n in nodes] == [h.path for h in hits]
    assert [n.score for n in nodes] == [h.score for h in hits]
    top = nodes[0].node
    assert top.metadata["path"] == "birds/owls.md"
    assert top.metadata["heading_path"] == "Owls > Hunting"
    lines = (root / "birds/owls.md").read_text().splitlines()
    start, end = top.metadata["start_line"], top.metadata["end_line"]
    assert top.get_content() == "\n".join(lines[start - 1 : end])
    assert "Barn owls hunt at night" in top.get_content()
    assert top.metadata["explain"]["total"] == pytest.approx(nodes[0].score, abs=1e-6)


@needs_llama_index
def test_a_query_engine_answers_from_the_vault_with_llama_indexs_mock_llm(
    indexed: tuple[Path, Path],
) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    from vaultsearch.integrations.llama_index import VaultRetriever

    root, index = indexed
    retriever = VaultRetriever(root, index_dir=index, top_k=1)
    try:
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        response = engine.query("When do barn owls hunt?")
    finally:
        retriever.close()
    # MockLLM answers with the prompt it was given: the context is the retrieved passage
    assert "Barn owls hunt at night by sound" in str(response)
    assert "Black Sea" not in str(response)
    assert [n.node.metadata["path"] for n in response.source_nodes] == ["birds/owls.md"]
    assert "start_line" not in str(response)  # metadata kept out of the prompt
    assert Settings._embed_model is None  # no embedding model was needed, or resolved


def test_the_langchain_retriever_feeds_a_chain(indexed: tuple[Path, Path]) -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from vaultsearch.integrations.langchain import VaultRetriever

    root, index = indexed
    retriever = VaultRetriever(root, index_dir=index, top_k=1)
    seen: list[str] = []

    def prompt_seen(prompt: object) -> object:
        seen.append(str(prompt))
        return prompt

    try:
        docs = retriever.invoke("which birds hunt in the dark")
        chain = (
            {
                "context": retriever
                | RunnableLambda(lambda ds: "\n".join(d.page_content for d in ds)),
                "question": RunnablePassthrough(),
            }
            | PromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
            | RunnableLambda(prompt_seen)
            | FakeListLLM(responses=["At night."])
        )
        answer = chain.invoke("When do barn owls hunt?")
    finally:
        retriever.close()
    assert [d.metadata["path"] for d in docs] == ["birds/owls.md"]
    assert docs[0].metadata["heading_path"] == "Owls > Hunting"
    assert "Barn owls hunt at night by sound" in docs[0].page_content
    assert answer == "At night."
    assert "Barn owls hunt at night by sound" in seen[0] and "Black Sea" not in seen[0]
