"""Serve a GGUF model with llama.cpp's OpenAI-compatible HTTP server, in-process through `xllamacpp`.

Run by `make real-model` with the separate environment's interpreter (`.venv-real-model`), never the service's:
`xllamacpp` has no command-line entry point, so this is the whole server. It listens until killed.

    .venv-real-model/bin/python bench/real_model/llama_server.py --model model.gguf --port 8091
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="path of the .gguf file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="qwen2.5-coder-1.5b-instruct", help="the model name /v1/models lists")
    parser.add_argument("--ctx", type=int, default=8192, help="context size in tokens (prompt + reply)")
    parser.add_argument("--n-predict", type=int, default=2048, help="server-side cap on generated tokens")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_predict = args.n_predict  # a backstop: the service sends max_tokens on every call
    params.n_parallel = 1  # one slot: two cores cannot decode two replies faster than one after the other
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    server = xllamacpp.Server(params)
    print(f"llama.cpp server on {server.listening_address} (model {args.alias})", flush=True)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
