"""Parsers (and renderers) of the text formats models write: timed caption lines (``caption``) and hand
box lines (``hands``). Plain functions on strings; they import nothing of egohorizon, so every floor may
use them: prompts render the gold targets with them, metrics and tasks parse replies with them."""
