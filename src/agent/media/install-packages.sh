#!/bin/sh
# What nginx-rtmp media nodes (and their tests) need on the machine: nginx, its RTMP module and
# ffmpeg. Installs Debian's packages when something is missing; quick and quiet when all is there.
set -eu
module="${SWITCHYARD_NGINX_RTMP_MODULE:-/usr/lib/nginx/modules/ngx_rtmp_module.so}"
PATH="$PATH:/usr/sbin:/usr/local/sbin:/sbin"
have() { command -v "$1" >/dev/null 2>&1; }
if have nginx && have ffmpeg && have ffprobe && [ -r "$module" ]; then
  exit 0
fi
if ! have apt-get; then
  echo "setup:media: install nginx with its RTMP module ($module) and ffmpeg with your system's packages" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup:media: installing nginx libnginx-mod-rtmp ffmpeg (Debian packages)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends nginx libnginx-mod-rtmp ffmpeg >/dev/null
