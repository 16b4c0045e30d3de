#!/bin/bash
# W9 latency (docs/perf-log.md, 2026-12-06 evening): ticks produced to a topic of 3
# partitions at a fixed rate, `cep run` following the topic into an output topic, each
# output message stamped when it arrives; latency = arrival - the send time of the
# match's last tick. Needs the release binaries built with the Kafka client
# (cargo build --release -p cep-cli -p cep-kafka --features cep-cli/kafka,cep-kafka/kafka)
# and the test broker (bash .ci/install-kafka-broker).
#
#   xtask/scripts/w9-latency.sh TICKS.jsonl RATE [PORT]
#
# TICKS.jsonl: W1 ticks as JSON lines (cargo xtask csv DIR --ticks N --jsonl).
set -euo pipefail
TICKS=$1; RATE=$2; PORT=${3:-19095}
BIN=${BIN:-target/release}; B=127.0.0.1:$PORT
TANSU=$(bash .ci/install-kafka-broker)
WORK=$(mktemp -d)
"$TANSU" broker --listener-url "tcp://$B" --advertised-listener-url "tcp://$B" \
    --storage-engine memory://tansu/ > "$WORK/tansu.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null; rm -rf "$WORK"' EXIT
sleep 1
"$BIN/cep-kafka" create "kafka://$B/ticks" --partitions 3
"$BIN/cep-kafka" create "kafka://$B/matches" --partitions 3
echo 'QUERY up PATTERN SEQ(Tick a, Tick b) WHERE strict-contiguity AND [key] AND b.price > a.price' > "$WORK/up.cep"
"$BIN/cep-kafka" consume "kafka://$B/matches" --follow 6 --stamp > "$WORK/recv.txt" &
CONSUMER=$!
"$BIN/cep" run --query "$WORK/up.cep" --events "kafka://$B/ticks" --out "kafka://$B/matches" --threads 1 \
    > /dev/null 2> "$WORK/cep.err" &
CEP=$!
sleep 1
"$BIN/cep-kafka" produce "kafka://$B/ticks" "$TICKS" --key key --rate "$RATE" 2> "$WORK/produce.err"
sleep 2
kill -TERM $CEP; wait $CEP || true; wait $CONSUMER || true
T0=$(grep -o 't0 [0-9]*' "$WORK/produce.err" | cut -d' ' -f2)
python3 - "$WORK/recv.txt" "$T0" "$RATE" <<'PY'
import json, sys
recv, t0, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lat = []
for line in open(recv):
    ns, _, body = line.partition("\t")
    rows = [r for v in json.loads(body)["vars"].values() for r in v]
    lat.append((int(ns) - (t0 + max(rows) * 1e9 / rate)) / 1e3)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"{len(lat)} matches: p50 {q(0.5):.0f} us, p99 {q(0.99):.0f} us, max {lat[-1]:.0f} us")
PY
tail -1 "$WORK/cep.err"
grep behind "$WORK/produce.err"
