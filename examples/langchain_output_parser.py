"""Keep your own prompt and wiring; add CitationOutputParser at the end.

The chain has the shape of LangChain's own citation guide: assign the retrieved
context, assign the answer, then check the answer's markers against the context.
"""

from operator import itemgetter

from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from citemark import MarkerOutOfRangeError
from langchain_citemark import CITED_ANSWER_PROMPT, CitationOutputParser, format_documents

docs = [
    Document(
        "Redistributions of source code must retain the copyright notice.",
        metadata={"source": "BSD"},
    ),
    Document("You must give recipients a copy of this License.", metadata={"source": "Apache-2.0"}),
]
retriever = RunnableLambda(lambda question: docs)
llm = FakeListChatModel(
    responses=["Keep the copyright notice [1] and ship the License [2].", "Also [5]."]
)

chain = (
    RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=RunnablePassthrough.assign(context=lambda x: format_documents(x["context"]))
        | CITED_ANSWER_PROMPT
        | llm
        | StrOutputParser()
    )
    | CitationOutputParser()  # reads "context" (documents) and "answer" (text)
)

answer = chain.invoke({"question": "What must a redistribution keep?"})
print([(c.marker, c.doc_id) for c in answer.citations])
try:
    chain.invoke({"question": "Anything else?"})
except MarkerOutOfRangeError as exc:
    print(f"rejected: [{exc.marker}] names no document; {exc.valid_count} were shown")
