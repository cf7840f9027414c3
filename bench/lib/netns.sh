# shellcheck shell=bash
# bench/lib/netns.sh — sourced by bench/distribution.sh and bench/dataflow.sh:
# a namespaced, rate-shaped topology of a master and clusters of workers.
# The caller sets P (the namespaces' prefix, unique to its run), CLUSTERS,
# WORKERS, UP (array: cluster i's uplink in Mbit/s at UP[i-1]), FAST_MBIT
# (each worker's link), MASTER_MBIT, MASTER_IP, NSLIST=() (the namespaces
# made, which its cleanup deletes with ip netns del) and a function
# skip MESSAGE that ends the run when the host cannot build namespaces.
#
# Topology: core router P-core; master P-m (MASTER_IP, link 10.200.0.0/24);
# cluster i: router P-c<i> with bridge br (10.200.<i>.1/24) and uplink
# 10.199.<i>.0/24 to the core; worker j of cluster i: P-c<i>w<j> at
# 10.200.<i>.<10+j>, on the bridge through its own veth. Every link is a
# veth pair with a token bucket on both ends.

newns() {
  ip netns add "$1" 2>/dev/null || return 1
  NSLIST+=("$1")
  ip -n "$1" link set lo up
}

# shape NS DEV MBIT: token bucket on the egress of DEV (5 ms of burst).
shape() {
  local burst=$(($3 * 1000000 / 8 / 200))
  [ "$burst" -lt 16384 ] && burst=16384
  ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$3mbit" burst "$burst" latency 50ms
}

# link NS_A DEV_A NS_B DEV_B MBIT: a veth pair shaped both ways.
link() {
  ip link add name "$2" netns "$1" type veth peer name "$4" netns "$3"
  shape "$1" "$2" "$5"
  shape "$3" "$4" "$5"
  ip -n "$1" link set dev "$2" up
  ip -n "$3" link set dev "$4" up
}

# netns_topology: builds the topology above (CLUSTERS x WORKERS + 3 + CLUSTERS
# namespaces).
netns_topology() {
  local i j c w
  newns "$P-core" || skip "cannot create network namespaces (ip netns add failed)"
  newns "$P-m" || skip "cannot create network namespaces"
  ip netns exec "$P-core" sysctl -qw net.ipv4.ip_forward=1 >/dev/null 2>&1 ||
    skip "cannot enable forwarding in a namespace"
  ip link add name m netns "$P-core" type veth peer name wan netns "$P-m" 2>/dev/null ||
    skip "cannot create veth pairs"
  shape "$P-core" m "$MASTER_MBIT" 2>/dev/null || skip "tc tbf shaping is not permitted"
  shape "$P-m" wan "$MASTER_MBIT"
  ip -n "$P-core" link set dev m up
  ip -n "$P-m" link set dev wan up
  ip -n "$P-core" addr add 10.200.0.1/24 dev m
  ip -n "$P-m" addr add "$MASTER_IP/24" dev wan
  ip -n "$P-m" route add default via 10.200.0.1
  for i in $(seq 1 "$CLUSTERS"); do
    c=$P-c$i
    newns "$c"
    ip netns exec "$c" sysctl -qw net.ipv4.ip_forward=1 >/dev/null
    link "$P-core" "c$i" "$c" wan "${UP[$((i - 1))]}"
    ip -n "$P-core" addr add "10.199.$i.1/24" dev "c$i"
    ip -n "$c" addr add "10.199.$i.2/24" dev wan
    ip -n "$P-core" route add "10.200.$i.0/24" via "10.199.$i.2"
    ip -n "$c" route add default via "10.199.$i.1"
    ip -n "$c" link add name br type bridge
    ip -n "$c" link set dev br up
    ip -n "$c" addr add "10.200.$i.1/24" dev br
    for j in $(seq 1 "$WORKERS"); do
      w=$P-c${i}w$j
      newns "$w"
      link "$c" "w$j" "$w" eth0 "$FAST_MBIT"
      ip -n "$c" link set dev "w$j" master br
      ip -n "$w" addr add "10.200.$i.$((10 + j))/24" dev eth0
      ip -n "$w" route add default via "10.200.$i.1"
    done
  done
}

# netns_delete: deletes every namespace of NSLIST (their veths go with them).
netns_delete() {
  local ns
  for ns in "${NSLIST[@]+"${NSLIST[@]}"}"; do
    ip netns del "$ns" 2>/dev/null || true
  done
  NSLIST=()
}
