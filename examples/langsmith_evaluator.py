"""citemark's LangSmith evaluator on two recorded runs, without a LangSmith account.

langsmith.evaluate(target, data, evaluators=[citations_valid_evaluator()]) calls the
evaluator exactly like this, once per run; here the runs are plain objects.
"""

from langchain_core.documents import Document

from langchain_citemark import citations_valid_evaluator

documents = [Document("Patents end on filing."), Document("Keep the notices.")]


class Run:
    def __init__(self, answer: str) -> None:
        self.inputs = {"question": "When do patents end?", "documents": documents}
        self.outputs = {"answer": answer}


evaluator = citations_valid_evaluator()
for answer in ["They end on filing [1].", "They end on filing [3].", "No idea."]:
    for result in evaluator(Run(answer), None)["results"]:
        print(result["key"], result["score"], "-", result["comment"])
