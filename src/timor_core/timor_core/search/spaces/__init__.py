"""What a search walks and in which order: the rules of a space (``rules``), the space of serial assemblies
(``space``), its lazy, resumable iteration (``iterator``), the named spaces (``presets``), the space cheapest first
(``cost_order``) and the ranges of positions done (``ranges``).

May import from timor_core: errors, limits, common, model, task.
"""
