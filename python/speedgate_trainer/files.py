"""Atomic writes of the result and heartbeat files (docs/protocol.md sections 2 and 3)."""

import json
import os
import time


def write_atomic(path, text):
    """Writes PATH.tmp.<pid>, fsyncs and renames it to PATH; on any failure the temporary
    file is removed and the error propagates, so PATH is never half-written."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json_atomic(path, obj):
    write_atomic(path, json.dumps(obj, indent=1, allow_nan=False) + "\n")


def heartbeat(path, step):
    """{"pid", "step", "time"} at start (step 0) and after every optimizer step."""
    if path:
        write_json_atomic(path, {"pid": os.getpid(), "step": step, "time": time.time()})
