"""Packing: fit ranked memory, live items and conversation turns into an exact token budget.

``candidates.PackCandidate`` is the plain input, ``packer.pack`` chooses, cuts and
orders the items (``pieces`` builds each item's header and cut body and counts its
cost; ``assemble`` renders the placed items into the payload), and ``render`` turns
them into text, markdown or JSON whose token count is exact
(``total_tokens == count(context) <= budget``). ``overlap`` sends the overlap of
neighbouring chunks once; ``turn_prior`` weighs who spoke a chat turn against who the
question is about. ``config`` holds the [packing] section.
"""
