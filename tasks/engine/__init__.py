"""The lane engine: what runs a lane over a frozen task, above the backends that build its
candidates and the search that orders them. Today it holds the search lane's loop
(`tasks.engine.search_lane.run_search`: a language's space tuned, every candidate checked); the
one-engine redesign ([N2]) moves the lane's lease, checker, judgement and store here.

Nothing is imported here, so importing a module of the room loads only what that module needs.
"""
