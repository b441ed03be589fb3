"""The lane engine: what runs a lane, and Discover, over a frozen task. One path for both:
lease a device -> the frozen task -> the checker -> the proposer -> the judgement -> the store.

    lane          one lane start to end (flows/lane.py runs it as a flow)
    discover      Discover, a lane whose proposer is the backends (flows/discover.py)
    proposers     who makes the candidates, as a plug-in axis: the search, the backends, the
                  model's room or an operator's `module:callable` drop-in; and who judges them
    model_room    the one door to the model's room (tasks/agents), by name, only where a model
                  or a drop-in answers: a run without one never imports that room
    search_lane   the search's loop: a language's space tuned, every candidate checked

Nothing is imported here, so importing a module of the room loads only what that module needs.
"""
