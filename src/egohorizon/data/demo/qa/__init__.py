"""The demo-world QA benchmark (issue 13): ``items`` (multiple-choice items, balanced, split by held-out
days), ``tasks`` (the 14 EgoMonth question makers), ``history`` (the participant's past they may see)."""
