"""Layer 1, the contract: what every other layer agrees on.

The data models (`Source`, `Citation`, `CitedAnswer`), the error tree, the reason codes
and their sentences, the written form of a citation (`syntax`), counted nouns
(`words`), the blank-text rule (`blank`), input validation, running async code
synchronously (`sync`) and writing artifacts atomically (`artifacts`).

May import: nothing in citemark outside this folder.
"""
