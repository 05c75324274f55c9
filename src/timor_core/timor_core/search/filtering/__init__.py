"""What rules an assembly out before or while it is built: the filters and their chain (``filters``,
``filter_chain``, ``filter_state``, ``funnel``), the reach bounds from the modules (``quick_reach``,
``space_reach``), the proof that a goal is out of reach (``reach_proof``, with its bounds in ``proof_numpy`` and
``proof_kernel``), a proof's certificate for its family of chains (``family_proof``; looked up without the chain:
``certified``) and those certificates passed between worker processes (``lessons``).

May import from timor_core: errors, limits, common, model, kinematics, task, search.spaces.
"""
