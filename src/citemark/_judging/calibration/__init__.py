"""Calibration, the only road to a gate, as a private subpackage (SPEC §3.11).

``labelset`` reads and checks the human-labelled set; ``agreement`` holds the pure
agreement functions (no model); ``run`` registers thresholds and measures a judge
against the labels. The public names are in `citemark.calibration`.
"""
