"""The device side of benchlab: standard library only, shipped to a device as one zipapp.

ARCHITECTURE.md, invariant 9 (the measurement core runs on a 2 GB board): nothing in this package
imports a third-party module at module level, and every verb imports only what it needs, so the
agent starts in tens of milliseconds and idles in a few MB. A benchmark that needs more (numpy for
`reference_bench`) imports it inside the function that runs on the device.

Usage (one JSON object in on stdin where a verb takes one, one JSON object out)::

    python -m benchlab.agent clock
    echo '{"kind": "module", "name": "numpy"}' | python agent.pyz exists
    echo '{"argv": ["{python}", "-c", "print(1)"]}' | python agent.pyz run
"""
