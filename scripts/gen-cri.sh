#!/usr/bin/env bash
# Regenerates the TypeScript CRI client code in src/lib/cri/gen/ from
# proto/runtime/v1/api.proto with protoc and ts-proto.
#
# The output is committed so that building klet needs neither protoc nor
# this script; run it (npm run gen:cri) after editing the proto, and commit
# both. Needs protoc >= 3.12 (Debian: apt-get install protobuf-compiler).
#
# ts-proto options, and why:
#   outputServices=generic-definitions  plain service definitions (method name,
#                            request and response types): transport.ts needs
#                            no gRPC library
#   forceLong=bigint         int64 timestamps are nanoseconds (> 2^53): exact
#   esModuleInterop=true     matches tsconfig
#   importSuffix=.js         NodeNext ESM needs explicit extensions
#   env=node                 bytes are Buffers (ExecSync output)
#   useExactTypes=false      fromPartial(x: DeepPartial<T>), no Exact<> generics
#   useOptionals=none        scalars and repeated fields always present after
#                            decode/fromPartial; sub-messages may be undefined
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# shellcheck source=bootstrap.sh
source scripts/bootstrap.sh

plugin="$root/node_modules/.bin/protoc-gen-ts_proto"
out="$root/src/lib/cri/gen"

command -v protoc >/dev/null || { echo "gen-cri: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
[ -x "$plugin" ] || { echo "gen-cri: $plugin missing (npm install)" >&2; exit 1; }

node scripts/check-cri-proto.js

rm -rf "$out"
mkdir -p "$out"
protoc \
  --plugin="protoc-gen-ts_proto=$plugin" \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=generic-definitions,forceLong=bigint,esModuleInterop=true,importSuffix=.js,env=node,useExactTypes=false,useOptionals=none \
  -I proto/runtime/v1 \
  proto/runtime/v1/api.proto

echo "gen-cri: wrote $(cd "$out" && ls | tr '\n' ' ')"
