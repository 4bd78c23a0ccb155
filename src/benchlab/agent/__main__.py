"""Entry point for `python -m benchlab.agent VERB` and `python path/to/agent VERB`.

The start stamp is taken before anything else is imported, so `clock` reports the agent's
own start and the controller's clock-offset estimate cancels the agent's runtime.
"""

import time

_STARTED_AT = time.time()

if __name__ == "__main__":
    import os
    import sys

    if not __package__:
        # Run as a directory or file (`python .../benchlab/agent`): the package dir itself is
        # sys.path[0]; swap it for the dir above `benchlab` so absolute imports resolve.
        _here = os.path.dirname(os.path.abspath(__file__))
        if sys.path and os.path.abspath(sys.path[0] or ".") == _here:
            sys.path.pop(0)
        sys.path.insert(0, os.path.dirname(os.path.dirname(_here)))

    from benchlab.agent.verbs import main

    sys.exit(main(started_at=_STARTED_AT))
