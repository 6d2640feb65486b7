/*
 * SoftVA: a VA-API driver that runs on the CPU, so that tests exercise the real libva and
 * libavcodec VA-API code paths on machines without a GPU (like NIOEmbedded for swift-nio).
 *
 * libva loads it as $LIBVA_DRIVERS_PATH/${LIBVA_DRIVER_NAME}_drv_video.so; SwiftPM builds it as
 * libsoftva_drv_video.so, so LIBVA_DRIVER_NAME=libsoftva. libva 2.17 looks the entry point up
 * as __vaDriverInit_<VA_MAJOR_VERSION>_<minor> for minor = 17 down to 0.
 *
 * Environment read at vaInitialize:
 *   SOFTVA_PROFILE=<file>      advertise the device described by a Hardware/Profiles/*.profile file
 *   SOFTVA_COUNTERS=<file>     write key=value counters (host transfers, operations) there
 *   SOFTVA_FAIL_AFTER=<N>      vaEndPicture fails from the (N+1)th frame on
 *   SOFTVA_FAIL_STATUS=<name>  the status of that failure (default VA_STATUS_ERROR_HW_BUSY)
 *   SOFTVA_FAIL_ON=<list>      which operations count and fail: decode,encode,vpp (default all)
 */
#ifndef SOFTVA_H
#define SOFTVA_H

#include <va/va_backend.h>

/* The driver entry point that libva 2.17 (VA-API 1.17) resolves with dlsym. */
VAStatus __vaDriverInit_1_17(VADriverContextP ctx);

#endif
