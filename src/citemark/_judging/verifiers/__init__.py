"""Support verifiers: does a cited source say what the sentence citing it says?

A verifier answers one question per premise, as ALCE and AutoAIS ask it: do these
passages, taken together, entail this claim? `base` holds the seam (`Verifier`,
`Premise`, `Verdict`, `VerifierIdentity`); `lexical` is the rule that needs no
model, `nli` runs a local NLI model on ONNX Runtime, `judge` asks any chat model.
`support` turns a row's resolved citations into premises and computes ALCE's
citation recall and precision, and `reattribution` names other given sources that
do support a claim. Every result is advisory: nothing here gates a check.

May import: the layers below `_judging` and `citemark._judging` itself.
"""
