#!/bin/sh
# What the test suite needs on the machine, as Debian packages: nginx, its RTMP module and ffmpeg
# (nginx-rtmp media nodes), and prometheus (promtool and the server, which check the alert rules
# and the dashboard's queries in config/), systemd-analyze (which checks the units in
# config/systemd), nats-server (the cluster tests run real NATS clusters: docs/cluster.md), janus
# (the `janus` WebRTC engine: docs/webrtc.md, "Janus nodes") and iproute2 (its network namespaces).
# Installs only what is missing; quick and quiet when everything is there.
set -eu
module="${SWITCHYARD_NGINX_RTMP_MODULE:-/usr/lib/nginx/modules/ngx_rtmp_module.so}"
PATH="$PATH:/usr/sbin:/usr/local/sbin:/sbin"
have() { command -v "$1" >/dev/null 2>&1; }
missing=""
if ! have nginx || ! [ -r "$module" ]; then missing="$missing nginx libnginx-mod-rtmp"; fi
if ! have ffmpeg || ! have ffprobe; then missing="$missing ffmpeg"; fi
if ! have promtool || ! have prometheus; then missing="$missing prometheus"; fi
if ! have systemd-analyze; then missing="$missing systemd"; fi
if ! have nats-server; then missing="$missing nats-server"; fi
if ! have janus; then missing="$missing janus"; fi
if ! have ip; then missing="$missing iproute2"; fi
if [ -z "$missing" ]; then
  exit 0
fi
if ! have apt-get; then
  echo "setup: install$missing with your system's packages (nginx's RTMP module at $module)" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing$missing (Debian packages)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086 # a list of package names
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
# Debian's packages start a Prometheus server, a NATS server and a Janus gateway as services: the
# suite runs its own.
if [ -d /run/systemd/system ] && echo "$missing" | grep -q janus; then
  $sudo systemctl disable --now janus >/dev/null 2>&1 || true
fi
if [ -d /run/systemd/system ] && echo "$missing" | grep -q nats-server; then
  $sudo systemctl disable --now nats-server >/dev/null 2>&1 || true
fi
if [ -d /run/systemd/system ] && echo "$missing" | grep -q prometheus; then
  $sudo systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
