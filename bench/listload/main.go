// listload: a closed-loop RESP load of one list or sorted-set command
// with random (unpadded) indexes, which redis-benchmark cannot send (its
// __rand_int__ is zero-padded, and LINDEX refuses "000042").
//
//	go run ./bench/listload -p PORT -cmd CMD -n REQUESTS -c CONNS -len LEN [-d VALUE]
//
// CMD: lindex, lset, lrange10 on list `l`; on sorted set `z`, whose member
// i is "%012d:" padded with 'v' to VALUE bytes with score i: zscore,
// zrank, zadd (member i to score i.5), zrange10 (ranks i..i+9),
// zrangebyscore10 (scores i..i+9). Transactions over strings `k:i`
// (i, j drawn from [0, len)): txnincr sends MULTI, INCR k:i, INCR k:j,
// EXEC together; txnset sends MULTI, SET k:i VALUE, SET k:j VALUE, EXEC
// (one op = one transaction). On stream `s`, whose entry ids are i-0 for i
// in [1, len]: xrange10 (XRANGE s i-0 + COUNT 10), xrevrange10 (XREVRANGE
// s i-0 - COUNT 10). On string `b` (i drawn from [0, len), a bit offset):
// getbit (GETBIT b i), setbit (SETBIT b i 1), bitfield (BITFIELD b GET u32
// i), getrange100 (GETRANGE b i/8 i/8+99).
//
// Prints "ops_per_sec p50_ms p99_ms" (one request in flight per connection).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func resp(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// reply reads one RESP reply (bulk, array of bulks, simple, error or
// integer); an error reply ends the run.
func reply(r *bufio.Reader) {
	line, err := r.ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	switch line[0] {
	case '-':
		fmt.Fprintln(os.Stderr, "error reply:", line)
		os.Exit(1)
	case '$':
		n, _ := strconv.Atoi(line[1 : len(line)-2])
		if n >= 0 {
			if _, err := r.Discard(n + 2); err != nil {
				os.Exit(1)
			}
		}
	case '*':
		n, _ := strconv.Atoi(line[1 : len(line)-2])
		for i := 0; i < n; i++ {
			reply(r)
		}
	}
}

// member is sorted-set member i: "%012d:" padded with 'v' to size bytes.
func member(i, size int) string {
	m := fmt.Sprintf("%012d:", i)
	if len(m) < size {
		m += strings.Repeat("v", size-len(m))
	}
	return m
}

func main() {
	port := flag.Int("p", 6379, "port")
	cmd := flag.String("cmd", "lindex", "lindex, lset, lrange10, zscore, zrank, zadd, zrange10, zrangebyscore10, txnincr, txnset, xrange10, xrevrange10, getbit, setbit, bitfield or getrange100")
	n := flag.Int("n", 100000, "requests")
	conns := flag.Int("c", 32, "connections")
	length := flag.Int("len", 1000000, "list length (indexes are drawn from [0, len))")
	size := flag.Int("d", 100, "LSET value size")
	flag.Parse()
	value := string(make([]byte, *size))
	per := *n / *conns
	lat := make([][]time.Duration, *conns)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			r := bufio.NewReaderSize(conn, 1<<16)
			rng := rand.New(rand.NewSource(int64(c) + 1))
			for i := 0; i < per; i++ {
				idx := rng.Intn(*length)
				var req []byte
				switch *cmd {
				case "lindex":
					req = resp("LINDEX", "l", strconv.Itoa(idx))
				case "lset":
					req = resp("LSET", "l", strconv.Itoa(idx), value)
				case "lrange10":
					req = resp("LRANGE", "l", strconv.Itoa(idx), strconv.Itoa(idx+9))
				case "zscore":
					req = resp("ZSCORE", "z", member(idx, *size))
				case "zrank":
					req = resp("ZRANK", "z", member(idx, *size))
				case "zadd":
					req = resp("ZADD", "z", strconv.Itoa(idx)+".5", member(idx, *size))
				case "zrange10":
					req = resp("ZRANGE", "z", strconv.Itoa(idx), strconv.Itoa(idx+9))
				case "zrangebyscore10":
					req = resp("ZRANGEBYSCORE", "z", strconv.Itoa(idx), strconv.Itoa(idx+9))
				case "xrange10":
					req = resp("XRANGE", "s", strconv.Itoa(idx+1)+"-0", "+", "COUNT", "10")
				case "xrevrange10":
					req = resp("XREVRANGE", "s", strconv.Itoa(idx+1)+"-0", "-", "COUNT", "10")
				case "getbit":
					req = resp("GETBIT", "b", strconv.Itoa(idx))
				case "setbit":
					req = resp("SETBIT", "b", strconv.Itoa(idx), "1")
				case "bitfield":
					req = resp("BITFIELD", "b", "GET", "u32", strconv.Itoa(idx))
				case "getrange100":
					req = resp("GETRANGE", "b", strconv.Itoa(idx/8), strconv.Itoa(idx/8+99))
				case "txnincr", "txnset":
					j := strconv.Itoa(rng.Intn(*length))
					a, b := "k:"+strconv.Itoa(idx), "k:"+j
					req = resp("MULTI")
					if *cmd == "txnincr" {
						req = append(req, resp("INCR", a)...)
						req = append(req, resp("INCR", b)...)
					} else {
						req = append(req, resp("SET", a, value)...)
						req = append(req, resp("SET", b, value)...)
					}
					req = append(req, resp("EXEC")...)
				default:
					fmt.Fprintln(os.Stderr, "unknown -cmd", *cmd)
					os.Exit(2)
				}
				t := time.Now()
				if _, err := conn.Write(req); err != nil {
					os.Exit(1)
				}
				reply(r)
				if strings.HasPrefix(*cmd, "txn") {
					for k := 0; k < 3; k++ {
						reply(r)
					}
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		}(c)
	}
	wg.Wait()
	wall := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	q := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	fmt.Printf("%.0f %.3f %.3f\n", float64(len(all))/wall.Seconds(), q(0.5), q(0.99))
}
