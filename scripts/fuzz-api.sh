#!/usr/bin/env bash
# Fuzzes `deskhand serve` from docs/openapi.json with schemathesis (PyPI), time-boxed: no 5xx
# answer, no answer slower than 5 s, every status, content type and body as the file says.
# Usage: scripts/fuzz-api.sh PYTHON_VENV_BIN DESKHAND [SECONDS]   (scripts/test.sh runs it)
set -euo pipefail
bin=$1
deskhand=$2
seconds=${3:-30}
work=$(mktemp -d)
serve_pid=
cleanup() { [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
# Tasks the fuzzer submits run against a model server that is not there: they fail (after
# their retries) the way a network failure does, which is part of what is checked.
env -u OPENAI_API_KEY -u LLM_PROVIDER ANTHROPIC_API_KEY=fuzz ANTHROPIC_BASE_URL=http://127.0.0.1:9 \
  DESKHAND_DATA_DIR="$work" DESKHAND_CONFIG_DIR="$work" DESKHAND_SOCKET="$work/api.sock" \
  DESKHAND_API_TOKEN="$token" "$deskhand" serve --listen "127.0.0.1:$port" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 100); do [ -S "$work/api.sock" ] && break; sleep 0.05; done
schema="$PWD/docs/openapi.json"
# schemathesis keeps a cache in the working directory: the scratch one, not the repository.
cd "$work"
"$bin/schemathesis" run "$schema" --url "http://127.0.0.1:$port" \
  -H "Authorization: Bearer $token" --max-time "$seconds" --workers 2 --max-response-time 5 \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --warnings off
