"""The ``citemark`` command line as a private subpackage.

``main`` parses and runs the commands; ``console`` prints their summaries and progress
with rich.
"""
