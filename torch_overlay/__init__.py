"""torch_overlay: build a patched torch from the pinned official wheel and a patch series.

Data flows one way: pin -> base (fetch/verify/extract) -> tree (git fork tree) -> wheel.
`series` reads and writes the patch series; `errors` holds the exception every command reports.
"""
