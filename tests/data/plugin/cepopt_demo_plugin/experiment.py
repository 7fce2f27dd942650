"""An experiment added from outside cepopt."""

from cepopt.experiments.framework import Experiment

EXPERIMENT = Experiment("plugin-exp", "a plug-in's experiment", grid=lambda quick: [{"x": 1}],
                        run=lambda point: {"y": point["x"] + 1})
