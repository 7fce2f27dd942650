"""gloria family: GLORIA shared trend aggregation (paper 002; specs/gloria.md).

Modules, one algorithm each:

* ``template``    the GRETA-style template (transitions, start/end types, Kleene cycles, SCCs; §2.2)
* ``block``       Block: one Q-set of a transition (queries, snapshot type)
* ``canonical``   options in canonical form: blocks sorted, blocks cut to an edge's queries
* ``plan``        GloriaPlan: one annotated partition of the queries per transition (Defs 2.6, 2.7)
* ``problem``     pools (SEQ transitions, Kleene super-pools), sharing classes, pair terms
* ``cost``        the one cost model (Eqs 2-4, §3.2 edge weights, §6 cycle weights V1/V2)
* ``graph``       candidate graph: nodes per pool, allowed weighted node pairs
* ``nodes``       node generation (§5.1) in NOPRUNE / GLORIA / safe mode
* ``pruning``     Eq. 22 distances and node pruning (§5.2; paper and safe rules)
* ``path_search`` Alg. 1 (§5.3): exact tree DP on forest-shaped pool graphs, GETPATHS + repair elsewhere
* ``greedy``      the paper's Greedy baseline (§8.1)
* ``exhaustive``  every set partition x snapshot type (Eq. 1) and brute force
* ``methods``     the Family declaration and the registered methods
* ``compiled``    which modules setup.py compiles (mypyc), and the guard against stale compiled code
"""

# Before any submodule is imported: compiled modules that no longer match their sources (an edited
# editable checkout) or CEPOPT_PURE_PYTHON=1 make every compiled module load from its source (compiled.py).
from cepopt.gloria.compiled import compiled_modules, guard

guard()

__all__ = ["compiled_modules"]
