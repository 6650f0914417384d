#!/usr/bin/env bash
# TLS vs plain TCP, strata-server vs redis-server 7.0 (Debian's, built with
# TLS): redis-benchmark GET and SET over each server's plain port and its
# tls-port (mutual TLS: a client certificate, tls-auth-clients yes; the
# certificates made here by openssl), pipelines P1 and P16, runs
# alternating between the servers, each run on fresh servers. Prints one
# line per run and test: ops/s and the server's CPU per request (user +
# system over the run, every thread). Client and server share the
# machine's cores.
#   N (200000)  CLIENTS (50)  RUNS (3)  PIPELINES ("1 16")  TESTS (get,set)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

N=${N:-200000}
CLIENTS=${CLIENTS:-50}
RUNS=${RUNS:-3}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-get,set}

need_common
need redis-server redis-server
need openssl openssl
need_strata

certs=$(bench_tmpdir certs)
(
    cd "$certs"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca
    for who in server client; do
        openssl req -newkey rsa:2048 -nodes -keyout $who.key -out $who.csr -subj /CN=$who
    done
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    for who in server client; do
        openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
            -extfile $who.ext -out $who.crt
    done
) >/dev/null 2>&1
TLS_SERVER=(--tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key"
    --tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients yes)
TLS_CLIENT=(--tls --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")

echo "# redis-benchmark -t $TESTS -n $N -c $CLIENTS -P {$PIPELINES} --threads 1 --csv [--tls, mutual]"
for run in $(seq "$RUNS"); do
    for srv in strata redis; do
        port=$(free_port)
        tls_port=$(free_port)
        if [ "$srv" = redis ]; then
            start_redis "$port" "$(bench_tmpdir redis)" --tls-port "$tls_port" "${TLS_SERVER[@]}"
        else
            start_strata "$port" "$(bench_tmpdir strata)" --maxmemory-ram 4gb \
                --tls-port "$tls_port" "${TLS_SERVER[@]}"
        fi
        pid=$LAST_PID
        for p in $PIPELINES; do
            for transport in plain tls; do
                if [ "$transport" = tls ]; then
                    args=(-p "$tls_port" "${TLS_CLIENT[@]}")
                else
                    args=(-p "$port")
                fi
                c0=$(cpu_s "$pid")
                out=$(redis-benchmark -h 127.0.0.1 "${args[@]}" -t "$TESTS" -n "$N" -c "$CLIENTS" \
                    -P "$p" --threads 1 --csv 2>/dev/null | tail -n +2)
                alive "$pid"
                c1=$(cpu_s "$pid")
                tests=$(echo "$TESTS" | tr ',' ' ' | wc -w)
                us=$(awk -v a="$c0" -v b="$c1" -v n="$((N * tests))" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')
                rps=$(echo "$out" | cut -d, -f2 | tr -d '"' | tr '\n' ' ')
                echo "run $run $srv P$p $transport: ${rps}ops/s; server CPU ${us} us/request"
            done
        done
        stop_server "$pid"
    done
done
