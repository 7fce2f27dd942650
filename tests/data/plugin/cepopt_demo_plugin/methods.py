"""A method added to the Sharon family from outside cepopt."""

from cepopt.sharon.plan import SharonPlan
from cepopt.solve import register


@register("sharon", "plugin-empty", "a plug-in's method: share nothing")
def empty(problem, *, time_limit=None, seed=0):
    return SharonPlan.empty()
