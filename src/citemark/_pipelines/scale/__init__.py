"""``citemark check`` on Ray Data: the same records and summary, computed on many workers.

``engine`` holds the batch callable for ``Dataset.map_batches``, the readers that give
every row its line number, and the driver that writes the outputs. Nothing here imports
ray at import time; ``citemark.ray`` is the public face.
"""
