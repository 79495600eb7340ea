#!/usr/bin/env bash
# Regenerates xla_service/proto/ from protos/ with protoc (grpcio-tools), in a
# throw-away virtual environment: grpcio-tools needs protobuf>=4.21, the
# project pins protobuf==3.20.3, and builder-style code from protoc 3.21 runs
# on it. protos/ keeps CompilerGym's path so that the generated descriptor is
# byte-identical to compiler_gym's own (tests/unit/test_proto.py checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/protoc
python3 -m venv "$venv"
"$venv/bin/pip" install -q grpcio-tools==1.53.2
out=$(mktemp -d)
"$venv/bin/python" -m grpc_tools.protoc -Iprotos --python_out="$out" --grpc_python_out="$out" \
  protos/compiler_gym/service/proto/compiler_gym_service.proto
cp "$out"/compiler_gym/service/proto/compiler_gym_service_pb2*.py xla_service/proto/
sed -i 's/^from compiler_gym.service.proto import compiler_gym_service_pb2 as/from xla_service.proto import compiler_gym_service_pb2 as/' \
  xla_service/proto/compiler_gym_service_pb2_grpc.py
echo "regenerated xla_service/proto/"
