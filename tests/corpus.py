"""Words that generated notes are made of, shared by the crash tests and the store bench.

Each word is distinctive enough that a keyword search for it finds exactly the notes
that were written with it, which is what those checks count.
"""

WORDS = [
    "river", "mountain", "cloud", "forest", "desert", "ocean", "valley", "glacier", "meadow",
    "canyon", "harbor", "lantern", "violin", "copper", "saffron", "orchard", "falcon", "marble",
    "thunder", "willow",
]  # fmt: skip
