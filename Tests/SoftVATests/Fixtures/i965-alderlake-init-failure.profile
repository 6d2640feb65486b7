# source: shared/hardware/vainfo/failing-i965-forced-on-alderlake-frigate.txt (blakeblackshear/frigate#6078), written by hand for SoftVA's tests
name failing-i965-forced-on-alderlake
driver i965
api 1.17
init-failure VA_STATUS_ERROR_UNKNOWN libva error: /usr/lib/x86_64-linux-gnu/dri/i965_drv_video.so init failed
