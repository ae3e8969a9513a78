"""Check the citations of a chain you do not want to touch, with a callback handler.

The chain below is unmodified user code with its own "Source n:" numbering. The
handler recovers that numbering from the prompt, and records one report per run.
"""

from operator import itemgetter

from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from langchain_citemark import CitationCallbackHandler

docs = [
    Document("The license terminates if you sue over patents.", metadata={"source": "Apache-2.0"}),
    Document("Copyright notices must be kept.", metadata={"source": "BSD"}),
]
prompt = ChatPromptTemplate.from_template("Cite as [n].\n{numbered}\n\nQuestion: {question}")
llm = FakeListChatModel(
    responses=["It terminates [1].", "It terminates [4].", "The sources do not say."]
)

# Existing code, unchanged:
chain = RunnablePassthrough.assign(
    context=itemgetter("question") | RunnableLambda(lambda q: docs)
).assign(
    answer=RunnablePassthrough.assign(
        numbered=lambda x: "\n".join(
            f"Source {i}: {d.page_content}" for i, d in enumerate(x["context"], 1)
        )
    )
    | prompt
    | llm
    | StrOutputParser()
)

handler = CitationCallbackHandler()
for question in ["When does it end?", "And then?", "What about trademarks?"]:
    chain.invoke({"question": question}, config={"callbacks": [handler]})

for report in handler.reports:
    cited = [c.doc_id for c in report.citations]
    print(report.outcome, report.marker, cited)
