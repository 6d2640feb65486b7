// libva's core, DRM, X11 and VPP headers, plus prefixed shims for macros Swift cannot import.
#ifndef CVA_H
#define CVA_H

#include <va/va.h>
#include <va/va_drm.h>
#include <va/va_x11.h>
#include <va/va_vpp.h>
#include <va/va_str.h>
#include <X11/Xlib.h>

/// VA_STATUS_SUCCESS as a typed value.
static inline VAStatus cva_VA_STATUS_SUCCESS(void) { return VA_STATUS_SUCCESS; }
/// VA_INVALID_ID, written as a cast macro.
static inline VAGenericID cva_VA_INVALID_ID(void) { return VA_INVALID_ID; }
/// VA_INVALID_SURFACE.
static inline VASurfaceID cva_VA_INVALID_SURFACE(void) { return VA_INVALID_SURFACE; }
/// VA_ATTRIB_NOT_SUPPORTED: the value vaGetConfigAttributes reports for an attribute a config lacks.
static inline uint32_t cva_VA_ATTRIB_NOT_SUPPORTED(void) { return VA_ATTRIB_NOT_SUPPORTED; }

#endif
