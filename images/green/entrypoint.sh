#!/bin/sh
# The green agent image's entrypoint.
#   docker run IMAGE --host 0.0.0.0 --port 9009 --card-url URL   -> swe-green serve --host ...
#   docker run IMAGE                                             -> swe-green serve --host 0.0.0.0 --port 9009
#   docker run IMAGE serve ... | participant gold ... | images build | ...  -> swe-green <that>
# Options first (as the AgentBeats template CI and Amber start green agents) mean `serve`.
set -e
if [ "$#" -eq 0 ]; then
  exec swe-green serve --host 0.0.0.0 --port 9009
fi
case "$1" in
  -h|--help) exec swe-green "$@" ;;
  -*) exec swe-green serve "$@" ;;
  swe-green) shift; exec swe-green "$@" ;;
  *) exec swe-green "$@" ;;
esac
