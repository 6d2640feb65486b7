# Shared by the benchmark scripts: the x264 settings a vaf output was encoded with, so ffmpeg
# can be given the same encode. x264 writes its options into the stream (an SEI message);
# ffmpeg's own defaults differ from vaf's in the GOP (keyint 250 against vaf's 2 s) and the
# VBV cap, which change the encoder's work.

# Prints "-x264-params keyint=…:min-keyint=…[:vbv-maxrate=…:vbv-bufsize=…]" for FILE's video.
x264_params_of() {
  local options
  options=$(strings "$1" | grep -o 'x264 - core.*' | head -1 | tr ' ' '\n')
  [ -n "$options" ] || { echo "no x264 options in $1" >&2; return 1; }
  echo "$options" | awk -F= '
    $1 == "keyint" { p = p sep "keyint=" $2; sep = ":" }
    $1 == "keyint_min" { p = p sep "min-keyint=" $2; sep = ":" }
    $1 == "vbv_maxrate" { p = p sep "vbv-maxrate=" $2; sep = ":" }
    $1 == "vbv_bufsize" { p = p sep "vbv-bufsize=" $2; sep = ":" }
    END { print p }'
}

# Prints the x264 option lines where two encodes differ (empty when they match).
x264_differences() {
  diff <(strings "$1" | grep -o 'x264 - core.*' | head -1 | tr ' ' '\n' | grep =) \
       <(strings "$2" | grep -o 'x264 - core.*' | head -1 | tr ' ' '\n' | grep =) | grep '^[<>]' || true
}
