// libdrm's device enumeration and version queries (render nodes, driver names).
#ifndef CDRM_H
#define CDRM_H

#include <xf86drm.h>

#endif
