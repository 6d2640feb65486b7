/*
 * SoftVA: the VA-API driver vtable. Surfaces, images and buffers live in host memory; every
 * operation runs synchronously inside vaEndPicture, so vaSyncSurface never waits.
 *
 * Environment:
 *   SOFTVA_PROFILE=<file>      personality (device profile) to advertise instead of the native one
 *   SOFTVA_COUNTERS=<file>     key=value counters, rewritten after every vaEndPicture, vaCreateContext,
 *                              vaDestroyContext and at vaTerminate
 *   SOFTVA_FAIL_AFTER=<N>      vaEndPicture fails from the (N+1)th frame on
 *   SOFTVA_FAIL_STATUS=<name>  VA_STATUS_ERROR_HW_BUSY (default) or VA_STATUS_ERROR_OPERATION_FAILED, ...
 *   SOFTVA_FAIL_ON=<list>      comma-separated subset of decode,encode,vpp the fault applies to (default all)
 *   SOFTVA_VPP_FILTERS=<set>   the VPP filters offered: deinterlacing (the default) or none
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softva_internal.h"

#define SVA_MAX_PROFILES 64
#define SVA_MAX_ENTRYPOINTS 32
#define SVA_MAX_WIDTH 16384
#define SVA_MAX_HEIGHT 16384

#define DRV(ctx) ((sva_driver *)(ctx)->pDriverData)
#define LOCKED(ctx) sva_driver *drv = DRV(ctx); pthread_mutex_lock(&drv->lock)
#define RETURN(status) do { VAStatus _s = (status); pthread_mutex_unlock(&drv->lock); return _s; } while (0)

/* ---- Object tables ---------------------------------------------------------------------- */

uint32_t sva_table_add(sva_table *t, void *item)
{
    for (uint32_t n = 0; n < t->cap; n++) {
        uint32_t i = (t->hint + n) % t->cap;
        if (!t->items[i]) {
            t->items[i] = item;
            t->hint = i + 1;
            return t->base + i;
        }
    }
    uint32_t ncap = t->cap ? t->cap * 2 : 64;
    if (ncap > 0x00ffffff)
        return VA_INVALID_ID;
    void **items = realloc(t->items, sizeof(void *) * ncap);
    if (!items)
        return VA_INVALID_ID;
    memset(items + t->cap, 0, sizeof(void *) * (ncap - t->cap));
    t->items = items;
    uint32_t i = t->cap;
    t->cap = ncap;
    t->items[i] = item;
    t->hint = i + 1;
    return t->base + i;
}

void *sva_table_get(sva_table *t, uint32_t id)
{
    if (id < t->base || id - t->base >= t->cap)
        return NULL;
    return t->items[id - t->base];
}

void *sva_table_take(sva_table *t, uint32_t id)
{
    void *item = sva_table_get(t, id);
    if (item)
        t->items[id - t->base] = NULL;
    return item;
}

/* ---- Native capabilities ---------------------------------------------------------------- */

static const sva_pair native_pairs[] = {
    { VAProfileJPEGBaseline, VAEntrypointVLD },
    { VAProfileJPEGBaseline, VAEntrypointEncPicture },
    { VAProfileH264ConstrainedBaseline, VAEntrypointVLD },
    { VAProfileH264ConstrainedBaseline, VAEntrypointEncSlice },
    { VAProfileH264Main, VAEntrypointVLD },
    { VAProfileH264Main, VAEntrypointEncSlice },
    { VAProfileH264High, VAEntrypointVLD },
    { VAProfileH264High, VAEntrypointEncSlice },
    { VAProfileNone, VAEntrypointVideoProc },
};
#define NUM_NATIVE_PAIRS ((int)(sizeof(native_pairs) / sizeof(native_pairs[0])))

/* The pairs SoftVA runs: the native ones, plus H.264 EncSliceLP, which the native personality
 * does not advertise (FFmpeg would pick it only with low_power=1) but personalities of devices
 * with low-power-only encoders (Arc) do. */
static int pair_executable(VAProfile p, VAEntrypoint e)
{
    if (sva_profile_is_h264(p) && e == VAEntrypointEncSliceLP)
        return 1;
    for (int i = 0; i < NUM_NATIVE_PAIRS; i++)
        if (native_pairs[i].profile == p && native_pairs[i].entrypoint == e)
            return 1;
    return 0;
}

static int is_h264_encode(VAProfile p, VAEntrypoint e)
{
    return sva_profile_is_h264(p) && (e == VAEntrypointEncSlice || e == VAEntrypointEncSliceLP);
}

#define JPEG_RT_FORMATS (VA_RT_FORMAT_YUV420 | VA_RT_FORMAT_YUV422 | VA_RT_FORMAT_YUV444 | VA_RT_FORMAT_YUV400)
#define VPP_RT_FORMATS (VA_RT_FORMAT_YUV420 | VA_RT_FORMAT_YUV420_10 | VA_RT_FORMAT_YUV422 | \
                        VA_RT_FORMAT_YUV444 | VA_RT_FORMAT_YUV400 | VA_RT_FORMAT_RGB32)

/* Returns 1 and the value when SoftVA itself has a value for the attribute. */
static int native_attribute(VAProfile p, VAEntrypoint e, VAConfigAttribType type, uint32_t *value)
{
    if (!pair_executable(p, e))
        return 0;
    if (sva_profile_is_h264(p)) {
        /* No MaxPictureWidth/Height here (FFmpeg reads the limits from the surface attributes):
         * a personality of a device that did not report them then does not report them either. */
        if (type == VAConfigAttribRTFormat) {
            *value = VA_RT_FORMAT_YUV420;
            return 1;
        }
        if (e == VAEntrypointVLD)
            return 0;
        switch (type) {
        case VAConfigAttribRateControl:
            /* accepted and recorded; the output is I_PCM whatever the mode */
            *value = VA_RC_CQP | VA_RC_CBR | VA_RC_VBR;
            return 1;
        case VAConfigAttribEncPackedHeaders:
            /* the client may write every header (SoftVA continues its slice headers); headers it
             * does not send, SoftVA writes */
            *value = VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE | VA_ENC_PACKED_HEADER_SLICE |
                     VA_ENC_PACKED_HEADER_MISC | VA_ENC_PACKED_HEADER_RAW_DATA;
            return 1;
        case VAConfigAttribEncMaxRefFrames:
            /* one reference in L0 and one in L1, so that FFmpeg codes B-frames */
            *value = 1 | (1u << 16);
            return 1;
        case VAConfigAttribEncMaxSlices:
            *value = 256;
            return 1;
        case VAConfigAttribEncSliceStructure:
            *value = VA_ENC_SLICE_STRUCTURE_ARBITRARY_MACROBLOCKS;
            return 1;
        default:
            return 0;
        }
    }
    switch (type) {
    case VAConfigAttribRTFormat:
        *value = e == VAEntrypointVideoProc ? VPP_RT_FORMATS : JPEG_RT_FORMATS;
        return 1;
    case VAConfigAttribMaxPictureWidth:
        *value = SVA_MAX_WIDTH;
        return 1;
    case VAConfigAttribMaxPictureHeight:
        *value = SVA_MAX_HEIGHT;
        return 1;
    case VAConfigAttribEncPackedHeaders:
        if (e != VAEntrypointEncPicture) return 0;
        *value = VA_ENC_PACKED_HEADER_RAW_DATA;
        return 1;
    case VAConfigAttribEncJPEG:
        if (e != VAEntrypointEncPicture) return 0;
        {
            VAConfigAttribValEncJPEG v;
            memset(&v, 0, sizeof(v));
            v.bits.max_num_components = 3;
            v.bits.max_num_scans = 1;
            v.bits.max_num_huffman_tables = 2;
            v.bits.max_num_quantization_tables = 2;
            *value = v.value;
        }
        return 1;
    default:
        return 0;
    }
}

static int advertised(sva_driver *drv, VAProfile p, VAEntrypoint e)
{
    if (!drv->personality.loaded)
        return pair_executable(p, e);
    for (int i = 0; i < drv->personality.num_pairs; i++)
        if (drv->personality.pairs[i].profile == p && drv->personality.pairs[i].entrypoint == e)
            return 1;
    return 0;
}

static int profile_advertised(sva_driver *drv, VAProfile p)
{
    if (!drv->personality.loaded) {
        for (int i = 0; i < NUM_NATIVE_PAIRS; i++)
            if (native_pairs[i].profile == p) return 1;
        return 0;
    }
    for (int i = 0; i < drv->personality.num_pairs; i++)
        if (drv->personality.pairs[i].profile == p) return 1;
    return 0;
}

static uint32_t attribute_value(sva_driver *drv, VAProfile p, VAEntrypoint e, VAConfigAttribType type)
{
    for (int i = 0; i < drv->personality.num_attrs; i++) {
        const sva_attr *a = &drv->personality.attrs[i];
        if (a->profile == p && a->entrypoint == e && a->type == type)
            return a->value;
    }
    uint32_t v;
    if (native_attribute(p, e, type, &v))
        return v;
    return VA_ATTRIB_NOT_SUPPORTED;
}

/* ---- Counters --------------------------------------------------------------------------- */

void sva_counters_write(sva_driver *drv)
{
    if (!drv->counters_path[0])
        return;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", drv->counters_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    const sva_counters *c = &drv->counters;
    fprintf(f, "personality=%s\n", drv->personality.loaded ? drv->personality.name : "softva-native");
    fprintf(f, "driver=%s\n", drv->personality.loaded && drv->personality.driver[0] ? drv->personality.driver : "softva");
    fprintf(f, "surfaces_created=%llu\n", (unsigned long long)c->surfaces_created);
    fprintf(f, "surfaces_destroyed=%llu\n", (unsigned long long)c->surfaces_destroyed);
    fprintf(f, "contexts_created=%llu\n", (unsigned long long)c->contexts_created);
    fprintf(f, "contexts_destroyed=%llu\n", (unsigned long long)c->contexts_destroyed);
    static const char *const kinds[3] = { "decode", "encode", "vpp" };
    for (int k = 0; k < 3; k++) {
        fprintf(f, "%s_contexts_live=%llu\n", kinds[k], (unsigned long long)c->live_contexts[k]);
        fprintf(f, "%s_contexts_peak=%llu\n", kinds[k], (unsigned long long)c->peak_live_contexts[k]);
    }
    fprintf(f, "images_created=%llu\n", (unsigned long long)c->images_created);
    fprintf(f, "images_derived=%llu\n", (unsigned long long)c->images_derived);
    fprintf(f, "images_mapped=%llu\n", (unsigned long long)c->images_mapped);
    fprintf(f, "derived_images_mapped=%llu\n", (unsigned long long)c->derived_images_mapped);
    fprintf(f, "get_image_calls=%llu\n", (unsigned long long)c->get_image_calls);
    fprintf(f, "put_image_calls=%llu\n", (unsigned long long)c->put_image_calls);
    fprintf(f, "get_image_bytes=%llu\n", (unsigned long long)c->get_image_bytes);
    fprintf(f, "put_image_bytes=%llu\n", (unsigned long long)c->put_image_bytes);
    fprintf(f, "derived_map_bytes=%llu\n", (unsigned long long)c->derived_map_bytes);
    fprintf(f, "host_transfer_bytes=%llu\n",
            (unsigned long long)(c->get_image_bytes + c->put_image_bytes + c->derived_map_bytes));
    fprintf(f, "decodes=%llu\n", (unsigned long long)c->decodes);
    fprintf(f, "encodes=%llu\n", (unsigned long long)c->encodes);
    fprintf(f, "vpp_ops=%llu\n", (unsigned long long)c->vpp_ops);
    fprintf(f, "vpp_layers=%llu\n", (unsigned long long)c->vpp_layers);
    fprintf(f, "vpp_deinterlaced=%llu\n", (unsigned long long)c->vpp_deinterlaced);
    static const char *const codecs[2] = { "jpeg", "h264" };
    for (int k = 0; k < 2; k++) {
        fprintf(f, "%s_decodes=%llu\n", codecs[k], (unsigned long long)c->codec_decodes[k]);
        fprintf(f, "%s_encodes=%llu\n", codecs[k], (unsigned long long)c->codec_encodes[k]);
    }
    fprintf(f, "coded_bytes=%llu\n", (unsigned long long)c->coded_bytes);
    fprintf(f, "end_pictures=%llu\n", (unsigned long long)c->end_pictures);
    fprintf(f, "injected_failures=%llu\n", (unsigned long long)c->injected_failures);
    fprintf(f, "failed_operations=%llu\n", (unsigned long long)c->failed_operations);
    fclose(f);
    rename(tmp, drv->counters_path);
}

/* ---- Terminate and config queries ------------------------------------------------------- */

static void free_buffer(sva_buffer *b)
{
    if (!b) return;
    free(b->data);
    free(b);
}

static void free_context_state(sva_context *c)
{
    free(c->dec.data);
    free(c->enc.header);
    free(c->vpp.layers);
    free(c->vpp.scratch);
    sva_h264_decoder_destroy(c);
    sva_h264_encoder_destroy(c);
}

static VAStatus sva_Terminate(VADriverContextP ctx)
{
    sva_driver *drv = DRV(ctx);
    sva_counters_write(drv);
    for (uint32_t i = 0; i < drv->surfaces.cap; i++) {
        sva_surface *s = drv->surfaces.items[i];
        if (s) { free(s->data); free(s); }
    }
    for (uint32_t i = 0; i < drv->buffers.cap; i++)
        free_buffer(drv->buffers.items[i]);
    for (uint32_t i = 0; i < drv->images.cap; i++)
        free(drv->images.items[i]);
    for (uint32_t i = 0; i < drv->contexts.cap; i++) {
        sva_context *c = drv->contexts.items[i];
        if (c) { free_context_state(c); free(c); }
    }
    for (uint32_t i = 0; i < drv->configs.cap; i++)
        free(drv->configs.items[i]);
    free(drv->surfaces.items); free(drv->buffers.items); free(drv->images.items);
    free(drv->contexts.items); free(drv->configs.items);
    sva_personality_free(&drv->personality);
    pthread_mutex_destroy(&drv->lock);
    free(drv);
    ctx->pDriverData = NULL;
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_QueryConfigProfiles(VADriverContextP ctx, VAProfile *list, int *num)
{
    LOCKED(ctx);
    int n = 0;
    if (!drv->personality.loaded) {
        for (int i = 0; i < NUM_NATIVE_PAIRS; i++) {
            int seen = 0;
            for (int j = 0; j < n; j++) if (list[j] == native_pairs[i].profile) seen = 1;
            if (!seen) list[n++] = native_pairs[i].profile;
        }
    } else {
        for (int i = 0; i < drv->personality.num_pairs && n < SVA_MAX_PROFILES; i++) {
            VAProfile p = drv->personality.pairs[i].profile;
            int seen = 0;
            for (int j = 0; j < n; j++) if (list[j] == p) seen = 1;
            if (!seen) list[n++] = p;
        }
    }
    *num = n;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_QueryConfigEntrypoints(VADriverContextP ctx, VAProfile profile,
                                           VAEntrypoint *list, int *num)
{
    LOCKED(ctx);
    int n = 0;
    if (!drv->personality.loaded) {
        for (int i = 0; i < NUM_NATIVE_PAIRS; i++)
            if (native_pairs[i].profile == profile) list[n++] = native_pairs[i].entrypoint;
    } else {
        for (int i = 0; i < drv->personality.num_pairs && n < SVA_MAX_ENTRYPOINTS; i++)
            if (drv->personality.pairs[i].profile == profile) list[n++] = drv->personality.pairs[i].entrypoint;
    }
    *num = n;
    RETURN(n ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_UNSUPPORTED_PROFILE);
}

static VAStatus check_pair(sva_driver *drv, VAProfile p, VAEntrypoint e)
{
    if (!profile_advertised(drv, p))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (!advertised(drv, p, e))
        return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_GetConfigAttributes(VADriverContextP ctx, VAProfile profile, VAEntrypoint ep,
                                        VAConfigAttrib *attribs, int num)
{
    LOCKED(ctx);
    VAStatus st = check_pair(drv, profile, ep);
    if (st != VA_STATUS_SUCCESS)
        RETURN(st);
    for (int i = 0; i < num; i++)
        attribs[i].value = attribute_value(drv, profile, ep, attribs[i].type);
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_CreateConfig(VADriverContextP ctx, VAProfile profile, VAEntrypoint ep,
                                 VAConfigAttrib *attribs, int num, VAConfigID *id)
{
    LOCKED(ctx);
    VAStatus st = check_pair(drv, profile, ep);
    if (st != VA_STATUS_SUCCESS)
        RETURN(st);
    sva_config *c = calloc(1, sizeof(*c));
    if (!c)
        RETURN(VA_STATUS_ERROR_ALLOCATION_FAILED);
    c->profile = profile;
    c->entrypoint = ep;
    c->executable = pair_executable(profile, ep);
    uint32_t rt_supported = attribute_value(drv, profile, ep, VAConfigAttribRTFormat);
    c->rt_format = rt_supported == VA_ATTRIB_NOT_SUPPORTED ? VA_RT_FORMAT_YUV420 : rt_supported;
    for (int i = 0; i < num; i++) {
        uint32_t supported = attribute_value(drv, profile, ep, attribs[i].type);
        switch (attribs[i].type) {
        case VAConfigAttribRTFormat:
            if (supported != VA_ATTRIB_NOT_SUPPORTED && (attribs[i].value & ~supported)) {
                free(c);
                RETURN(VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT);
            }
            c->rt_format = attribs[i].value;
            break;
        case VAConfigAttribEncPackedHeaders:
            c->packed_headers = attribs[i].value;
            break;
        default:
            /* other attributes (rate control, quality, ...) do not change what SoftVA does */
            break;
        }
    }
    c->id = sva_table_add(&drv->configs, c);
    if (c->id == VA_INVALID_ID) {
        free(c);
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    *id = c->id;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_DestroyConfig(VADriverContextP ctx, VAConfigID id)
{
    LOCKED(ctx);
    sva_config *c = sva_table_take(&drv->configs, id);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONFIG);
    free(c);
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_QueryConfigAttributes(VADriverContextP ctx, VAConfigID id, VAProfile *profile,
                                          VAEntrypoint *ep, VAConfigAttrib *attribs, int *num)
{
    LOCKED(ctx);
    sva_config *c = sva_table_get(&drv->configs, id);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONFIG);
    *profile = c->profile;
    *ep = c->entrypoint;
    int n = 0;
    attribs[n].type = VAConfigAttribRTFormat;
    attribs[n++].value = c->rt_format;
    if (c->entrypoint == VAEntrypointEncPicture || is_h264_encode(c->profile, c->entrypoint)) {
        attribs[n].type = VAConfigAttribEncPackedHeaders;
        attribs[n++].value = c->packed_headers;
    }
    *num = n;
    RETURN(VA_STATUS_SUCCESS);
}

/* ---- Surfaces --------------------------------------------------------------------------- */

static VAStatus create_surfaces(sva_driver *drv, unsigned int rt_format, unsigned int width,
                                unsigned int height, VASurfaceID *surfaces, unsigned int num,
                                VASurfaceAttrib *attribs, unsigned int num_attribs)
{
    uint32_t fourcc = 0;
    for (unsigned int i = 0; i < num_attribs; i++) {
        if (!(attribs[i].flags & VA_SURFACE_ATTRIB_SETTABLE))
            continue;
        if (attribs[i].type == VASurfaceAttribPixelFormat && attribs[i].value.type == VAGenericValueTypeInteger)
            fourcc = (uint32_t)attribs[i].value.value.i;
        if (attribs[i].type == VASurfaceAttribMemoryType &&
            attribs[i].value.type == VAGenericValueTypeInteger &&
            (attribs[i].value.value.i & ~VA_SURFACE_ATTRIB_MEM_TYPE_VA))
            return VA_STATUS_ERROR_UNSUPPORTED_MEMORY_TYPE;
        if (attribs[i].type == VASurfaceAttribExternalBufferDescriptor)
            return VA_STATUS_ERROR_UNSUPPORTED_MEMORY_TYPE;
    }
    if (!fourcc)
        fourcc = sva_default_fourcc_for_rt(rt_format);
    if (!fourcc)
        return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
    if (!sva_format_is_supported(fourcc))
        return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT;
    if (width == 0 || height == 0 || width > SVA_MAX_WIDTH || height > SVA_MAX_HEIGHT)
        return VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED;
    for (unsigned int i = 0; i < num; i++) {
        sva_surface *s = calloc(1, sizeof(*s));
        if (!s || sva_layout_make(fourcc, (int)width, (int)height, &s->layout) < 0 ||
            !(s->data = calloc(1, s->layout.data_size))) {
            if (s) free(s->data);
            free(s);
            goto fail;
        }
        s->rt_format = sva_rt_format_for_fourcc(fourcc);
        s->last_error = VA_STATUS_SUCCESS;
        /* black: Y at its minimum, chroma at mid-scale */
        sva_plane p[4];
        sva_planes_of(&s->layout, s->data, p);
        if (!sva_format_is_rgb(fourcc)) {
            for (int c = 1; c < 3; c++) {
                if (!p[c].present) continue;
                for (int y = 0; y < p[c].height; y++)
                    for (int x = 0; x < p[c].width; x++) {
                        uint8_t *d = p[c].base + (size_t)y * p[c].stride + (size_t)x * p[c].step;
                        if (p[c].bytes == 1) d[0] = 128; else { d[0] = 0; d[1] = 0x80; }
                    }
            }
        }
        s->id = sva_table_add(&drv->surfaces, s);
        if (s->id == VA_INVALID_ID) {
            free(s->data); free(s);
            goto fail;
        }
        surfaces[i] = s->id;
        drv->counters.surfaces_created++;
        continue;
fail:
        for (unsigned int j = 0; j < i; j++) {
            sva_surface *old = sva_table_take(&drv->surfaces, surfaces[j]);
            if (old) { free(old->data); free(old); drv->counters.surfaces_created--; }
            surfaces[j] = VA_INVALID_SURFACE;
        }
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_CreateSurfaces(VADriverContextP ctx, int width, int height, int format,
                                   int num, VASurfaceID *surfaces)
{
    LOCKED(ctx);
    if (width <= 0 || height <= 0 || num < 0)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    RETURN(create_surfaces(drv, (unsigned)format, (unsigned)width, (unsigned)height, surfaces,
                           (unsigned)num, NULL, 0));
}

static VAStatus sva_CreateSurfaces2(VADriverContextP ctx, unsigned int format, unsigned int width,
                                    unsigned int height, VASurfaceID *surfaces, unsigned int num,
                                    VASurfaceAttrib *attribs, unsigned int num_attribs)
{
    LOCKED(ctx);
    RETURN(create_surfaces(drv, format, width, height, surfaces, num, attribs, num_attribs));
}

static VAStatus sva_DestroySurfaces(VADriverContextP ctx, VASurfaceID *list, int num)
{
    LOCKED(ctx);
    VAStatus st = VA_STATUS_SUCCESS;
    for (int i = 0; i < num; i++) {
        sva_surface *s = sva_table_take(&drv->surfaces, list[i]);
        if (!s) { st = VA_STATUS_ERROR_INVALID_SURFACE; continue; }
        /* a derived image's buffer that still points here loses its storage */
        for (uint32_t b = 0; b < drv->buffers.cap; b++) {
            sva_buffer *buf = drv->buffers.items[b];
            if (buf && buf->derived_surface == s->id)
                buf->derived_surface = VA_INVALID_SURFACE;
        }
        free(s->data);
        free(s);
        drv->counters.surfaces_destroyed++;
    }
    RETURN(st);
}

static void add_attrib_int(VASurfaceAttrib *list, unsigned int *n, unsigned int cap,
                           VASurfaceAttribType type, uint32_t flags, int value)
{
    if (list && *n < cap) {
        list[*n].type = type;
        list[*n].flags = flags;
        list[*n].value.type = VAGenericValueTypeInteger;
        list[*n].value.value.i = value;
    }
    (*n)++;
}

static VAStatus sva_QuerySurfaceAttributes(VADriverContextP ctx, VAConfigID config,
                                           VASurfaceAttrib *list, unsigned int *num)
{
    LOCKED(ctx);
    sva_config *c = sva_table_get(&drv->configs, config);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONFIG);
    if (!num)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    uint32_t fourccs[32];
    int nf = 0;
    if (c->executable && sva_profile_is_h264(c->profile) && c->entrypoint == VAEntrypointVLD) {
        fourccs[nf++] = VA_FOURCC_NV12;
    } else if (c->executable && sva_profile_is_h264(c->profile)) {
        uint32_t f[] = { VA_FOURCC_NV12, VA_FOURCC_I420, VA_FOURCC_YV12 };
        for (size_t i = 0; i < sizeof(f) / 4; i++) fourccs[nf++] = f[i];
    } else if (c->executable && c->entrypoint == VAEntrypointVLD) {
        uint32_t f[] = { VA_FOURCC_NV12, VA_FOURCC_422H, VA_FOURCC_444P, VA_FOURCC_Y800 };
        for (size_t i = 0; i < sizeof(f) / 4; i++) fourccs[nf++] = f[i];
    } else if (c->executable && c->entrypoint == VAEntrypointEncPicture) {
        uint32_t f[] = { VA_FOURCC_NV12, VA_FOURCC_I420, VA_FOURCC_YV12, VA_FOURCC_422H,
                         VA_FOURCC_444P, VA_FOURCC_Y800 };
        for (size_t i = 0; i < sizeof(f) / 4; i++) fourccs[nf++] = f[i];
    } else if (c->executable) {
        for (int i = 0; i < sva_num_image_fourccs; i++) fourccs[nf++] = sva_image_fourccs[i];
    } else {
        /* a personality's configuration that SoftVA cannot execute: what any decoder offers */
        if (c->rt_format & VA_RT_FORMAT_YUV420) fourccs[nf++] = VA_FOURCC_NV12;
        if (c->rt_format & VA_RT_FORMAT_YUV420_10) fourccs[nf++] = VA_FOURCC_P010;
        if (!nf) fourccs[nf++] = VA_FOURCC_NV12;
    }
    unsigned int cap = list ? *num : 0, n = 0;
    for (int i = 0; i < nf; i++)
        add_attrib_int(list, &n, cap, VASurfaceAttribPixelFormat,
                       VA_SURFACE_ATTRIB_GETTABLE | VA_SURFACE_ATTRIB_SETTABLE, (int)fourccs[i]);
    add_attrib_int(list, &n, cap, VASurfaceAttribMinWidth, VA_SURFACE_ATTRIB_GETTABLE, 1);
    add_attrib_int(list, &n, cap, VASurfaceAttribMaxWidth, VA_SURFACE_ATTRIB_GETTABLE, SVA_MAX_WIDTH);
    add_attrib_int(list, &n, cap, VASurfaceAttribMinHeight, VA_SURFACE_ATTRIB_GETTABLE, 1);
    add_attrib_int(list, &n, cap, VASurfaceAttribMaxHeight, VA_SURFACE_ATTRIB_GETTABLE, SVA_MAX_HEIGHT);
    add_attrib_int(list, &n, cap, VASurfaceAttribMemoryType,
                   VA_SURFACE_ATTRIB_GETTABLE | VA_SURFACE_ATTRIB_SETTABLE, VA_SURFACE_ATTRIB_MEM_TYPE_VA);
    if (list && n > cap) {
        *num = n;
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    *num = n;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_SyncSurface(VADriverContextP ctx, VASurfaceID id)
{
    LOCKED(ctx);
    RETURN(sva_table_get(&drv->surfaces, id) ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_SURFACE);
}

static VAStatus sva_SyncSurface2(VADriverContextP ctx, VASurfaceID id, uint64_t timeout_ns)
{
    (void)timeout_ns;
    return sva_SyncSurface(ctx, id);
}

static VAStatus sva_QuerySurfaceStatus(VADriverContextP ctx, VASurfaceID id, VASurfaceStatus *status)
{
    LOCKED(ctx);
    if (!sva_table_get(&drv->surfaces, id))
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    *status = VASurfaceReady;
    RETURN(VA_STATUS_SUCCESS);
}

/* ---- Contexts --------------------------------------------------------------------------- */

static VAStatus sva_CreateContext(VADriverContextP ctx, VAConfigID config, int width, int height,
                                  int flag, VASurfaceID *targets, int num_targets, VAContextID *out)
{
    (void)flag;
    LOCKED(ctx);
    sva_config *cfg = sva_table_get(&drv->configs, config);
    if (!cfg)
        RETURN(VA_STATUS_ERROR_INVALID_CONFIG);
    if (!cfg->executable)
        RETURN(VA_STATUS_ERROR_UNSUPPORTED_PROFILE);
    if (width < 0 || height < 0 || width > SVA_MAX_WIDTH || height > SVA_MAX_HEIGHT)
        RETURN(VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED);
    for (int i = 0; i < num_targets; i++)
        if (!sva_table_get(&drv->surfaces, targets[i]))
            RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    sva_context *c = calloc(1, sizeof(*c));
    if (!c)
        RETURN(VA_STATUS_ERROR_ALLOCATION_FAILED);
    c->config = *cfg;
    c->width = width;
    c->height = height;
    c->render_target = VA_INVALID_SURFACE;
    if (sva_profile_is_h264(cfg->profile)) {
        VAStatus st = cfg->entrypoint == VAEntrypointVLD ? sva_h264_decoder_create(c) : sva_h264_encoder_create(c);
        if (st != VA_STATUS_SUCCESS) {
            free(c);
            RETURN(st);
        }
    }
    c->id = sva_table_add(&drv->contexts, c);
    if (c->id == VA_INVALID_ID) {
        free_context_state(c);
        free(c);
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    drv->counters.contexts_created++;
    int kind = sva_op_index(sva_config_op(cfg));
    if (++drv->counters.live_contexts[kind] > drv->counters.peak_live_contexts[kind])
        drv->counters.peak_live_contexts[kind] = drv->counters.live_contexts[kind];
    sva_counters_write(drv);
    *out = c->id;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_DestroyContext(VADriverContextP ctx, VAContextID id)
{
    LOCKED(ctx);
    sva_context *c = sva_table_take(&drv->contexts, id);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    drv->counters.contexts_destroyed++;
    drv->counters.live_contexts[sva_op_index(sva_config_op(&c->config))]--;
    sva_counters_write(drv);
    free_context_state(c);
    free(c);
    RETURN(VA_STATUS_SUCCESS);
}

/* ---- Buffers ---------------------------------------------------------------------------- */

static VAStatus new_buffer(sva_driver *drv, VABufferType type, unsigned int size, unsigned int num,
                           const void *data, sva_buffer **out)
{
    if (num == 0) num = 1;
    if (size == 0 || (uint64_t)size * num > 0x7fffffffu)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    sva_buffer *b = calloc(1, sizeof(*b));
    if (!b)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    b->type = type;
    b->size = size;
    b->num_elements = num;
    b->derived_surface = VA_INVALID_SURFACE;
    b->data = calloc(1, (size_t)size * num);
    if (!b->data) {
        free(b);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (data && type != VAEncCodedBufferType)
        memcpy(b->data, data, (size_t)size * num);
    b->id = sva_table_add(&drv->buffers, b);
    if (b->id == VA_INVALID_ID) {
        free_buffer(b);
        return VA_STATUS_ERROR_MAX_NUM_EXCEEDED;
    }
    *out = b;
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_CreateBuffer(VADriverContextP ctx, VAContextID context, VABufferType type,
                                 unsigned int size, unsigned int num, void *data, VABufferID *id)
{
    (void)context;
    LOCKED(ctx);
    sva_buffer *b;
    VAStatus st = new_buffer(drv, type, size, num, data, &b);
    if (st == VA_STATUS_SUCCESS)
        *id = b->id;
    RETURN(st);
}

static VAStatus sva_BufferSetNumElements(VADriverContextP ctx, VABufferID id, unsigned int num)
{
    LOCKED(ctx);
    sva_buffer *b = sva_table_get(&drv->buffers, id);
    if (!b)
        RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
    if (num == 0 || num > b->num_elements || b->derived_surface != VA_INVALID_SURFACE)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    b->num_elements = num;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_MapBuffer(VADriverContextP ctx, VABufferID id, void **pbuf)
{
    LOCKED(ctx);
    sva_buffer *b = sva_table_get(&drv->buffers, id);
    if (!b)
        RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
    if (b->type == VAImageBufferType && !b->data) {
        sva_surface *s = sva_table_get(&drv->surfaces, b->derived_surface);
        if (!s)
            RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
        *pbuf = s->data;
        drv->counters.derived_images_mapped++;
        drv->counters.derived_map_bytes += s->layout.data_size;
        sva_counters_write(drv);
    } else if (b->type == VAEncCodedBufferType) {
        b->segment.buf = b->data;
        b->segment.next = NULL;
        *pbuf = &b->segment;
    } else {
        *pbuf = b->data;
        if (b->type == VAImageBufferType) {
            drv->counters.images_mapped++;
            sva_counters_write(drv);
        }
    }
    b->map_count++;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_UnmapBuffer(VADriverContextP ctx, VABufferID id)
{
    LOCKED(ctx);
    sva_buffer *b = sva_table_get(&drv->buffers, id);
    if (!b)
        RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
    if (b->map_count > 0)
        b->map_count--;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_DestroyBuffer(VADriverContextP ctx, VABufferID id)
{
    LOCKED(ctx);
    sva_buffer *b = sva_table_get(&drv->buffers, id);
    if (!b)
        RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
    if (b->type == VAImageBufferType) {
        /* image buffers belong to their image: destroyed by vaDestroyImage */
        for (uint32_t i = 0; i < drv->images.cap; i++) {
            sva_image *img = drv->images.items[i];
            if (img && img->image.buf == id)
                RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
        }
    }
    sva_table_take(&drv->buffers, id);
    free_buffer(b);
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_BufferInfo(VADriverContextP ctx, VABufferID id, VABufferType *type,
                               unsigned int *size, unsigned int *num)
{
    LOCKED(ctx);
    sva_buffer *b = sva_table_get(&drv->buffers, id);
    if (!b)
        RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
    *type = b->type;
    *size = b->size;
    *num = b->num_elements;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_SyncBuffer(VADriverContextP ctx, VABufferID id, uint64_t timeout_ns)
{
    (void)timeout_ns;
    LOCKED(ctx);
    RETURN(sva_table_get(&drv->buffers, id) ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_BUFFER);
}

/* ---- Pictures --------------------------------------------------------------------------- */

static VAStatus sva_BeginPicture(VADriverContextP ctx, VAContextID context, VASurfaceID target)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    if (!sva_table_get(&drv->surfaces, target))
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    c->render_target = target;
    c->in_picture = 1;
    uint8_t *dd = c->dec.data; size_t dcap = c->dec.data_cap;
    uint8_t *hd = c->enc.header; size_t hcap = c->enc.header_cap;
    memset(&c->dec, 0, sizeof(c->dec));
    memset(&c->enc, 0, sizeof(c->enc));
    c->dec.pending_slices = VA_INVALID_ID;
    c->dec.data = dd; c->dec.data_cap = dcap;
    c->enc.header = hd; c->enc.header_cap = hcap;
    c->vpp.num_layers = 0;
    if (c->h264dec) sva_h264_decode_begin(c);
    if (c->h264enc) sva_h264_encode_begin(c);
    RETURN(VA_STATUS_SUCCESS);
}

static int append_bytes(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *src, size_t n)
{
    if (*len + n > *cap) {
        size_t ncap = (*cap ? *cap : 4096);
        while (ncap < *len + n) ncap *= 2;
        uint8_t *nb = realloc(*buf, ncap);
        if (!nb) return -1;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    return 0;
}

static void copy_param(void *dst, size_t dst_size, const sva_buffer *b)
{
    size_t n = b->size < dst_size ? b->size : dst_size;
    memset(dst, 0, dst_size);
    memcpy(dst, b->data, n);
}

static VAStatus render_decode(sva_context *c, sva_buffer *b, sva_buffer **pending_slices)
{
    switch (b->type) {
    case VAPictureParameterBufferType:
        copy_param(&c->dec.picture, sizeof(c->dec.picture), b);
        c->dec.have_picture = 1;
        return VA_STATUS_SUCCESS;
    case VAIQMatrixBufferType: {
        VAIQMatrixBufferJPEGBaseline iq;
        copy_param(&iq, sizeof(iq), b);
        for (int i = 0; i < 4; i++)
            if (iq.load_quantiser_table[i]) {
                c->dec.iq.load_quantiser_table[i] = 1;
                memcpy(c->dec.iq.quantiser_table[i], iq.quantiser_table[i], 64);
            }
        c->dec.have_iq = 1;
        return VA_STATUS_SUCCESS;
    }
    case VAHuffmanTableBufferType: {
        VAHuffmanTableBufferJPEGBaseline h;
        copy_param(&h, sizeof(h), b);
        for (int i = 0; i < 2; i++)
            if (h.load_huffman_table[i]) {
                c->dec.huffman.load_huffman_table[i] = 1;
                c->dec.huffman.huffman_table[i] = h.huffman_table[i];
            }
        c->dec.have_huffman = 1;
        return VA_STATUS_SUCCESS;
    }
    case VASliceParameterBufferType:
        if (b->size < sizeof(VASliceParameterBufferJPEGBaseline))
            return VA_STATUS_ERROR_INVALID_BUFFER;
        if (c->dec.num_slices == 0)
            memcpy(&c->dec.slice, b->data, sizeof(c->dec.slice));
        *pending_slices = b;
        return VA_STATUS_SUCCESS;
    case VASliceDataBufferType: {
        sva_buffer *sp = *pending_slices;
        size_t total = (size_t)b->size * b->num_elements;
        if (!sp) {
            if (append_bytes(&c->dec.data, &c->dec.data_len, &c->dec.data_cap, b->data, total) < 0)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            c->dec.num_slices++;
            return VA_STATUS_SUCCESS;
        }
        for (unsigned int i = 0; i < sp->num_elements; i++) {
            const VASliceParameterBufferJPEGBaseline *s =
                (const VASliceParameterBufferJPEGBaseline *)(sp->data + (size_t)i * sp->size);
            if ((size_t)s->slice_data_offset + s->slice_data_size > total)
                return VA_STATUS_ERROR_INVALID_PARAMETER;
            if (append_bytes(&c->dec.data, &c->dec.data_len, &c->dec.data_cap,
                             b->data + s->slice_data_offset, s->slice_data_size) < 0)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            c->dec.num_slices++;
        }
        *pending_slices = NULL;
        return VA_STATUS_SUCCESS;
    }
    default:
        return VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE;
    }
}

static VAStatus render_encode(sva_context *c, sva_buffer *b)
{
    switch (b->type) {
    case VAEncPictureParameterBufferType:
        copy_param(&c->enc.picture, sizeof(c->enc.picture), b);
        c->enc.have_picture = 1;
        return VA_STATUS_SUCCESS;
    case VAQMatrixBufferType:
        copy_param(&c->enc.qmatrix, sizeof(c->enc.qmatrix), b);
        c->enc.have_qmatrix = 1;
        return VA_STATUS_SUCCESS;
    case VAHuffmanTableBufferType:
        copy_param(&c->enc.huffman, sizeof(c->enc.huffman), b);
        c->enc.have_huffman = 1;
        return VA_STATUS_SUCCESS;
    case VAEncSliceParameterBufferType:
        copy_param(&c->enc.slice, sizeof(c->enc.slice), b);
        c->enc.have_slice = 1;
        return VA_STATUS_SUCCESS;
    case VAEncPackedHeaderParameterBufferType: {
        VAEncPackedHeaderParameterBuffer p;
        copy_param(&p, sizeof(p), b);
        c->enc.packed_pending = 1;
        c->enc.packed_bits = p.bit_length;
        return VA_STATUS_SUCCESS;
    }
    case VAEncPackedHeaderDataBufferType: {
        size_t total = (size_t)b->size * b->num_elements;
        size_t n = total;
        if (c->enc.packed_pending) {
            if (c->enc.packed_bits % 8)
                return VA_STATUS_ERROR_INVALID_PARAMETER; /* JPEG headers are whole bytes */
            n = c->enc.packed_bits / 8;
            if (n > total)
                return VA_STATUS_ERROR_INVALID_PARAMETER;
        }
        c->enc.packed_pending = 0;
        if (append_bytes(&c->enc.header, &c->enc.header_len, &c->enc.header_cap, b->data, n) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        return VA_STATUS_SUCCESS;
    }
    case VAEncMiscParameterBufferType:
    case VAEncSequenceParameterBufferType:
        /* rate control and quality hints: JPEG quality comes from the picture parameters */
        return VA_STATUS_SUCCESS;
    default:
        return VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE;
    }
}

/* Refuses a pipeline buffer SoftVA cannot draw, with a line on stderr saying why. */
static VAStatus refuse_vpp(VAStatus st, const char *why)
{
    fprintf(stderr, "softva: VPP: %s (%s)\n", why, sva_status_name(st));
    return st;
}

/* Each VAProcPipelineParameterBuffer is one layer of the picture, drawn at vaEndPicture in the
 * order rendered (several buffers in one vaRenderPicture call or one buffer per call alike). */
/* The one filter SoftVA runs: a VAProcFilterParameterBufferDeinterlacing asking for bob on two
 * interleaved fields. Anything else is refused with a line on stderr. */
static VAStatus deinterlacing_of(sva_driver *drv, VABufferID id, unsigned *flags)
{
    sva_buffer *fb = sva_table_get(&drv->buffers, id);
    if (!fb || !fb->data || fb->type != VAProcFilterParameterBufferType ||
        fb->size < sizeof(VAProcFilterParameterBufferBase))
        return refuse_vpp(VA_STATUS_ERROR_INVALID_BUFFER, "a filter is not a VAProcFilterParameterBuffer");
    const VAProcFilterParameterBufferBase *base = (const VAProcFilterParameterBufferBase *)fb->data;
    if (base->type != VAProcFilterDeinterlacing || !drv->deinterlaces)
        return refuse_vpp(VA_STATUS_ERROR_UNSUPPORTED_FILTER, "only the deinterlacing filter is supported");
    if (fb->size < sizeof(VAProcFilterParameterBufferDeinterlacing))
        return refuse_vpp(VA_STATUS_ERROR_INVALID_BUFFER, "deinterlacing buffer too small");
    const VAProcFilterParameterBufferDeinterlacing *d = (const VAProcFilterParameterBufferDeinterlacing *)fb->data;
    if (d->algorithm != VAProcDeinterlacingBob)
        return refuse_vpp(VA_STATUS_ERROR_UNSUPPORTED_FILTER, "only bob deinterlacing is supported");
    if (d->flags & ~(unsigned)(VA_DEINTERLACING_BOTTOM_FIELD_FIRST | VA_DEINTERLACING_BOTTOM_FIELD))
        return refuse_vpp(VA_STATUS_ERROR_FLAG_NOT_SUPPORTED, "deinterlacing flags other than the field order and field");
    *flags = d->flags;
    return VA_STATUS_SUCCESS;
}

static VAStatus render_vpp(sva_driver *drv, sva_context *c, sva_buffer *b)
{
    if (b->type != VAProcPipelineParameterBufferType)
        return VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE;
    if (b->size < sizeof(VAProcPipelineParameterBuffer))
        return VA_STATUS_ERROR_INVALID_BUFFER;
    const VAProcPipelineParameterBuffer *p = (const VAProcPipelineParameterBuffer *)b->data;
    int deinterlace = 0;
    unsigned deinterlace_flags = 0;
    if (p->num_filters > 1)
        return refuse_vpp(VA_STATUS_ERROR_UNSUPPORTED_FILTER, "more than one filter on a layer");
    if (p->num_filters == 1) {
        if (!p->filters)
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        VAStatus st = deinterlacing_of(drv, p->filters[0], &deinterlace_flags);
        if (st != VA_STATUS_SUCCESS)
            return st;
        /* bob reads no reference picture: references, if sent, are not needed */
        deinterlace = 1;
    }
    if (p->num_additional_outputs > 0)
        return refuse_vpp(VA_STATUS_ERROR_INVALID_PARAMETER, "additional outputs are not supported");
    if (p->rotation_state > VA_ROTATION_270)
        return refuse_vpp(VA_STATUS_ERROR_INVALID_PARAMETER, "rotation_state is not a VA_ROTATION_* angle");
    if (p->mirror_state & ~(uint32_t)(VA_MIRROR_HORIZONTAL | VA_MIRROR_VERTICAL))
        return refuse_vpp(VA_STATUS_ERROR_INVALID_PARAMETER, "mirror_state has bits other than VA_MIRROR_*");
    if (p->blend_state) {
        const VABlendState *blend = p->blend_state;
        if (blend->flags & VA_BLEND_LUMA_KEY)
            return refuse_vpp(VA_STATUS_ERROR_FLAG_NOT_SUPPORTED, "luma keying (VA_BLEND_LUMA_KEY) is not supported");
        if (blend->flags & ~(unsigned)(VA_BLEND_GLOBAL_ALPHA | VA_BLEND_PREMULTIPLIED_ALPHA))
            return refuse_vpp(VA_STATUS_ERROR_FLAG_NOT_SUPPORTED, "unknown VABlendState flags");
        if ((blend->flags & VA_BLEND_GLOBAL_ALPHA) && !(blend->global_alpha >= 0.0f && blend->global_alpha <= 1.0f))
            return refuse_vpp(VA_STATUS_ERROR_INVALID_PARAMETER, "global_alpha is outside 0...1");
    }
    if (c->vpp.num_layers >= SVA_MAX_VPP_LAYERS)
        return refuse_vpp(VA_STATUS_ERROR_MAX_NUM_EXCEEDED, "more layers in one picture than SoftVA draws");
    if (sva_grow((void **)&c->vpp.layers, &c->vpp.layers_cap, c->vpp.num_layers + 1, sizeof(sva_vpp_layer)) < 0)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    sva_vpp_layer *layer = &c->vpp.layers[c->vpp.num_layers];
    memset(layer, 0, sizeof(*layer));
    layer->params = *p;
    /* the pointers lead into the client's memory, valid only during this call */
    layer->has_surface_region = p->surface_region != NULL;
    if (p->surface_region) layer->surface_region = *p->surface_region;
    layer->has_output_region = p->output_region != NULL;
    if (p->output_region) layer->output_region = *p->output_region;
    layer->has_blend_state = p->blend_state != NULL;
    if (p->blend_state) layer->blend_state = *p->blend_state;
    layer->deinterlace = deinterlace;
    layer->deinterlace_flags = deinterlace_flags;
    layer->params.surface_region = NULL;
    layer->params.output_region = NULL;
    layer->params.filters = NULL;
    layer->params.forward_references = NULL;
    layer->params.backward_references = NULL;
    layer->params.blend_state = NULL;
    layer->params.additional_outputs = NULL;
    c->vpp.num_layers++;
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_RenderPicture(VADriverContextP ctx, VAContextID context, VABufferID *buffers, int num)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    if (!c->in_picture)
        RETURN(VA_STATUS_ERROR_OPERATION_FAILED);
    sva_buffer *pending_slices = sva_table_get(&drv->buffers, c->dec.pending_slices);
    for (int i = 0; i < num; i++) {
        sva_buffer *b = sva_table_get(&drv->buffers, buffers[i]);
        if (!b || !b->data)
            RETURN(VA_STATUS_ERROR_INVALID_BUFFER);
        VAStatus st;
        if (c->h264dec)
            st = sva_h264_decode_render(c, b);
        else if (c->h264enc)
            st = sva_h264_encode_render(c, b);
        else switch (c->config.entrypoint) {
        case VAEntrypointVLD: st = render_decode(c, b, &pending_slices); break;
        case VAEntrypointEncPicture: st = render_encode(c, b); break;
        default: st = render_vpp(drv, c, b); break;
        }
        if (st != VA_STATUS_SUCCESS)
            RETURN(st);
    }
    c->dec.pending_slices = pending_slices ? pending_slices->id : VA_INVALID_ID;
    RETURN(VA_STATUS_SUCCESS);
}

static sva_colour colour_of(VAProcColorStandardType standard, const VAProcColorProperties *props, int is_rgb)
{
    sva_colour c;
    /* BT.601 unless BT.709 is named: what libswscale and Intel's drivers assume for "none" */
    c.bt709 = standard == VAProcColorStandardBT709;
    c.full_range = is_rgb || props->color_range == VA_SOURCE_RANGE_FULL;
    return c;
}

/* What Intel's and AMD's drivers do outside the output region: paint output_background_color
 * (ARGB), converted to the surface's colour space; an alpha-carrying surface gets its alpha. */
static void fill_background(sva_surface *dst, uint32_t argb, sva_colour colour)
{
    float r = (float)((argb >> 16) & 0xff), g = (float)((argb >> 8) & 0xff), b = (float)(argb & 0xff);
    float value[4] = { r, g, b, (float)(argb >> 24) };
    if (!sva_format_is_rgb(dst->layout.fourcc))
        sva_rgb_to_yuv(colour, r, g, b, &value[0], &value[1], &value[2]);
    sva_plane planes[4];
    sva_planes_of(&dst->layout, dst->data, planes);
    for (int i = 0; i < 4; i++)
        if (planes[i].present)
            sva_plane_fill(&planes[i], value[i]);
}

/* How a layer blends (see the README), as Intel's iHD maps VABlendState: no blend state
 * replaces; a blend state without global or premultiplied alpha uses an RGB source's alpha as
 * straight alpha; global alpha alone ignores the source's alpha. */
static sva_blend blend_of(const sva_vpp_layer *layer, int source_has_alpha)
{
    sva_blend blend = { 0, 1.0f, SVA_SOURCE_ALPHA_IGNORED };
    unsigned flags = layer->has_blend_state ? layer->blend_state.flags : 0;
    if (!(flags & (VA_BLEND_GLOBAL_ALPHA | VA_BLEND_PREMULTIPLIED_ALPHA))) {
        if (layer->has_blend_state && source_has_alpha)
            blend.source_alpha = SVA_SOURCE_ALPHA_STRAIGHT;
        else
            blend.replace = 1;
        return blend;
    }
    if (flags & VA_BLEND_GLOBAL_ALPHA)
        blend.global_alpha = layer->blend_state.global_alpha;
    if (flags & VA_BLEND_PREMULTIPLIED_ALPHA)
        blend.source_alpha = SVA_SOURCE_ALPHA_PREMULTIPLIED;
    return blend;
}

static int format_has_alpha(uint32_t fourcc)
{
    return fourcc == VA_FOURCC_BGRA || fourcc == VA_FOURCC_RGBA || fourcc == VA_FOURCC_ARGB || fourcc == VA_FOURCC_ABGR;
}

/* Draws the layers in order. The first layer's background colour fills the target wherever the
 * first layer does not replace the pixels (outside its output region; everywhere when it blends). */
static VAStatus run_vpp(sva_driver *drv, sva_context *c, sva_surface *dst)
{
    if (c->vpp.num_layers == 0)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    for (unsigned i = 0; i < c->vpp.num_layers; i++) {
        const sva_vpp_layer *layer = &c->vpp.layers[i];
        sva_surface *src = sva_table_get(&drv->surfaces, layer->params.surface);
        if (!src)
            return VA_STATUS_ERROR_INVALID_SURFACE;
        VARectangle sr = { 0, 0, (uint16_t)src->layout.width, (uint16_t)src->layout.height };
        VARectangle dr = { 0, 0, (uint16_t)dst->layout.width, (uint16_t)dst->layout.height };
        if (layer->has_surface_region && layer->surface_region.width && layer->surface_region.height) {
            /* clipped to the surface, as iHD does: FFmpeg 5.1's overlay_vaapi gives its overlay the
             * main picture's region */
            VARectangle r = layer->surface_region;
            int x0 = r.x > 0 ? r.x : 0, y0 = r.y > 0 ? r.y : 0;
            int x1 = r.x + (int)r.width, y1 = r.y + (int)r.height;
            if (x1 > src->layout.width) x1 = src->layout.width;
            if (y1 > src->layout.height) y1 = src->layout.height;
            if (x0 >= x1 || y0 >= y1)
                return VA_STATUS_ERROR_INVALID_PARAMETER;
            sr = (VARectangle){ (int16_t)x0, (int16_t)y0, (uint16_t)(x1 - x0), (uint16_t)(y1 - y0) };
        }
        if (layer->has_output_region && layer->output_region.width && layer->output_region.height)
            dr = layer->output_region;
        /* a deinterlaced layer is drawn from a bobbed copy of its surface; rows below the
         * region (a decoder's padding: interlaced H.264 codes 32-row macroblock pairs) are not
         * the picture's and are not read */
        uint8_t *src_data = src->data;
        if (layer->deinterlace) {
            if (sva_grow((void **)&c->vpp.scratch, &c->vpp.scratch_cap, src->layout.data_size, 1) < 0)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            sva_bob(&src->layout, src->data, c->vpp.scratch, sr.y + sr.height,
                    (layer->deinterlace_flags & VA_DEINTERLACING_BOTTOM_FIELD) != 0);
            src_data = c->vpp.scratch;
        }
        sva_colour sc = colour_of(layer->params.surface_color_standard, &layer->params.input_color_properties,
                                  sva_format_is_rgb(src->layout.fourcc));
        sva_colour dc = colour_of(layer->params.output_color_standard, &layer->params.output_color_properties,
                                  sva_format_is_rgb(dst->layout.fourcc));
        sva_blend blend = blend_of(layer, format_has_alpha(src->layout.fourcc));
        int inside = dr.x >= 0 && dr.y >= 0 && dr.x + (int)dr.width <= dst->layout.width &&
                     dr.y + (int)dr.height <= dst->layout.height;
        int covers = dr.x <= 0 && dr.y <= 0 && dr.x + (int)dr.width >= dst->layout.width &&
                     dr.y + (int)dr.height >= dst->layout.height;
        if (i == 0 && (!covers || !blend.replace))
            fill_background(dst, layer->params.output_background_color, dc);
        /* a later layer with odd edges goes through sva_compose, which blends the chroma samples
         * it half covers instead of overwriting them */
        int chroma_aligned = ((dr.x | dr.y | dr.width | dr.height) & 1) == 0;
        VAStatus st;
        if (blend.replace && inside && (i == 0 || chroma_aligned) &&
            layer->params.rotation_state == VA_ROTATION_NONE && !layer->params.mirror_state)
            st = sva_convert(&src->layout, src_data, sr, sc, &dst->layout, dst->data, dr, dc);
        else
            st = sva_compose(&src->layout, src_data, sr, sc, &dst->layout, dst->data, dr, dc,
                             layer->params.rotation_state, layer->params.mirror_state, blend);
        if (st != VA_STATUS_SUCCESS)
            return st;
    }
    return VA_STATUS_SUCCESS;
}

static VAStatus sva_EndPicture(VADriverContextP ctx, VAContextID context)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    if (!c->in_picture)
        RETURN(VA_STATUS_ERROR_OPERATION_FAILED);
    c->in_picture = 0;
    sva_surface *target = sva_table_get(&drv->surfaces, c->render_target);
    if (!target)
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    drv->counters.end_pictures++;
    unsigned op = sva_config_op(&c->config);
    VAStatus st;
    if (drv->fail_after >= 0 && (drv->fail_ops & op) &&
        ++drv->frames_counted > (uint64_t)drv->fail_after) {
        drv->counters.injected_failures++;
        st = drv->fail_status;
    } else if (c->h264dec) {
        st = sva_h264_decode_picture(drv, c, target);
        if (st == VA_STATUS_SUCCESS) {
            drv->counters.decodes++;
            drv->counters.codec_decodes[SVA_CODEC_H264]++;
        }
    } else if (c->h264enc) {
        uint64_t bytes = 0;
        st = sva_h264_encode_picture(drv, c, target, &bytes);
        if (st == VA_STATUS_SUCCESS) {
            drv->counters.encodes++;
            drv->counters.codec_encodes[SVA_CODEC_H264]++;
            drv->counters.coded_bytes += bytes;
        }
    } else if (op == SVA_OP_DECODE) {
        st = sva_jpeg_decode_picture(drv, c, target);
        if (st == VA_STATUS_SUCCESS) {
            drv->counters.decodes++;
            drv->counters.codec_decodes[SVA_CODEC_JPEG]++;
        }
    } else if (op == SVA_OP_ENCODE) {
        sva_buffer *coded = c->enc.have_picture ? sva_table_get(&drv->buffers, c->enc.picture.coded_buf) : NULL;
        if (!c->enc.have_picture)
            st = VA_STATUS_ERROR_INVALID_PARAMETER;
        else if (!coded || coded->type != VAEncCodedBufferType)
            st = VA_STATUS_ERROR_INVALID_BUFFER;
        else {
            st = sva_jpeg_encode_picture(drv, c, target, coded);
            if (st == VA_STATUS_SUCCESS) {
                drv->counters.encodes++;
                drv->counters.codec_encodes[SVA_CODEC_JPEG]++;
                drv->counters.coded_bytes += coded->segment.size;
            }
        }
    } else {
        st = run_vpp(drv, c, target);
        if (st == VA_STATUS_SUCCESS) {
            drv->counters.vpp_ops++;
            drv->counters.vpp_layers += c->vpp.num_layers;
            for (unsigned i = 0; i < c->vpp.num_layers; i++)
                drv->counters.vpp_deinterlaced += (uint64_t)c->vpp.layers[i].deinterlace;
        }
    }
    target->last_error = st;
    if (st != VA_STATUS_SUCCESS && !(drv->fail_after >= 0 && st == drv->fail_status))
        drv->counters.failed_operations++;
    sva_counters_write(drv);
    RETURN(st);
}

/* ---- Images ----------------------------------------------------------------------------- */

static VAStatus sva_QueryImageFormats(VADriverContextP ctx, VAImageFormat *list, int *num)
{
    for (int i = 0; i < sva_num_image_fourccs; i++)
        list[i] = sva_image_format(sva_image_fourccs[i]);
    *num = sva_num_image_fourccs;
    (void)ctx;
    return VA_STATUS_SUCCESS;
}

static void fill_image(VAImage *img, const sva_layout *l)
{
    img->format = sva_image_format(l->fourcc);
    img->width = (uint16_t)l->width;
    img->height = (uint16_t)l->height;
    img->data_size = l->data_size;
    img->num_planes = (uint32_t)l->num_planes;
    for (int i = 0; i < 3; i++) {
        img->pitches[i] = l->pitches[i];
        img->offsets[i] = l->offsets[i];
    }
    img->num_palette_entries = 0;
    img->entry_bytes = 0;
}

static VAStatus sva_CreateImage(VADriverContextP ctx, VAImageFormat *format, int width, int height, VAImage *out)
{
    LOCKED(ctx);
    sva_layout l;
    if (!format || !sva_format_is_supported(format->fourcc))
        RETURN(VA_STATUS_ERROR_INVALID_IMAGE_FORMAT);
    if (sva_layout_make(format->fourcc, width, height, &l) < 0)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    sva_image *img = calloc(1, sizeof(*img));
    if (!img)
        RETURN(VA_STATUS_ERROR_ALLOCATION_FAILED);
    sva_buffer *b;
    VAStatus st = new_buffer(drv, VAImageBufferType, l.data_size, 1, NULL, &b);
    if (st != VA_STATUS_SUCCESS) {
        free(img);
        RETURN(st);
    }
    fill_image(&img->image, &l);
    img->image.buf = b->id;
    img->derived_from = VA_INVALID_SURFACE;
    img->image.image_id = sva_table_add(&drv->images, img);
    if (img->image.image_id == VA_INVALID_ID) {
        sva_table_take(&drv->buffers, b->id);
        free_buffer(b);
        free(img);
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    drv->counters.images_created++;
    *out = img->image;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_DeriveImage(VADriverContextP ctx, VASurfaceID surface, VAImage *out)
{
    LOCKED(ctx);
    sva_surface *s = sva_table_get(&drv->surfaces, surface);
    if (!s)
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    sva_image *img = calloc(1, sizeof(*img));
    sva_buffer *b = calloc(1, sizeof(*b));
    if (!img || !b) {
        free(img); free(b);
        RETURN(VA_STATUS_ERROR_ALLOCATION_FAILED);
    }
    b->type = VAImageBufferType;
    b->size = s->layout.data_size;
    b->num_elements = 1;
    b->derived_surface = surface;
    b->id = sva_table_add(&drv->buffers, b);
    fill_image(&img->image, &s->layout);
    img->image.buf = b->id;
    img->derived_from = surface;
    img->image.image_id = b->id == VA_INVALID_ID ? VA_INVALID_ID : sva_table_add(&drv->images, img);
    if (img->image.image_id == VA_INVALID_ID) {
        if (b->id != VA_INVALID_ID) sva_table_take(&drv->buffers, b->id);
        free(b); free(img);
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    drv->counters.images_derived++;
    *out = img->image;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_DestroyImage(VADriverContextP ctx, VAImageID id)
{
    LOCKED(ctx);
    sva_image *img = sva_table_take(&drv->images, id);
    if (!img)
        RETURN(VA_STATUS_ERROR_INVALID_IMAGE);
    free_buffer(sva_table_take(&drv->buffers, img->image.buf));
    free(img);
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus image_storage(sva_driver *drv, sva_image *img, sva_layout *l, uint8_t **data)
{
    sva_buffer *b = sva_table_get(&drv->buffers, img->image.buf);
    if (!b)
        return VA_STATUS_ERROR_INVALID_IMAGE;
    if (b->data) {
        *data = b->data;
    } else {
        sva_surface *s = sva_table_get(&drv->surfaces, b->derived_surface);
        if (!s)
            return VA_STATUS_ERROR_INVALID_SURFACE;
        *data = s->data;
    }
    sva_layout_make(img->image.format.fourcc, img->image.width, img->image.height, l);
    return VA_STATUS_SUCCESS;
}

static uint64_t region_bytes(uint32_t fourcc, unsigned int w, unsigned int h)
{
    return (uint64_t)w * h * sva_image_format(fourcc).bits_per_pixel / 8;
}

static sva_colour default_colour(uint32_t fourcc)
{
    sva_colour c = { 0, sva_format_is_rgb(fourcc) };
    return c;
}

static VAStatus sva_GetImage(VADriverContextP ctx, VASurfaceID surface, int x, int y,
                             unsigned int width, unsigned int height, VAImageID image)
{
    LOCKED(ctx);
    sva_surface *s = sva_table_get(&drv->surfaces, surface);
    sva_image *img = sva_table_get(&drv->images, image);
    if (!s)
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    if (!img)
        RETURN(VA_STATUS_ERROR_INVALID_IMAGE);
    sva_layout il;
    uint8_t *idata;
    VAStatus st = image_storage(drv, img, &il, &idata);
    if (st != VA_STATUS_SUCCESS)
        RETURN(st);
    if ((int)width > il.width || (int)height > il.height)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    VARectangle sr = { (int16_t)x, (int16_t)y, (uint16_t)width, (uint16_t)height };
    VARectangle dr = { 0, 0, (uint16_t)width, (uint16_t)height };
    st = sva_convert(&s->layout, s->data, sr, default_colour(s->layout.fourcc),
                     &il, idata, dr, default_colour(il.fourcc));
    if (st == VA_STATUS_SUCCESS) {
        drv->counters.get_image_calls++;
        drv->counters.get_image_bytes += region_bytes(il.fourcc, width, height);
        sva_counters_write(drv);
    }
    RETURN(st);
}

static VAStatus sva_PutImage(VADriverContextP ctx, VASurfaceID surface, VAImageID image,
                             int src_x, int src_y, unsigned int src_w, unsigned int src_h,
                             int dst_x, int dst_y, unsigned int dst_w, unsigned int dst_h)
{
    LOCKED(ctx);
    sva_surface *s = sva_table_get(&drv->surfaces, surface);
    sva_image *img = sva_table_get(&drv->images, image);
    if (!s)
        RETURN(VA_STATUS_ERROR_INVALID_SURFACE);
    if (!img)
        RETURN(VA_STATUS_ERROR_INVALID_IMAGE);
    sva_layout il;
    uint8_t *idata;
    VAStatus st = image_storage(drv, img, &il, &idata);
    if (st != VA_STATUS_SUCCESS)
        RETURN(st);
    VARectangle sr = { (int16_t)src_x, (int16_t)src_y, (uint16_t)src_w, (uint16_t)src_h };
    VARectangle dr = { (int16_t)dst_x, (int16_t)dst_y, (uint16_t)dst_w, (uint16_t)dst_h };
    st = sva_convert(&il, idata, sr, default_colour(il.fourcc),
                     &s->layout, s->data, dr, default_colour(s->layout.fourcc));
    if (st == VA_STATUS_SUCCESS) {
        drv->counters.put_image_calls++;
        drv->counters.put_image_bytes += region_bytes(il.fourcc, src_w, src_h);
        sva_counters_write(drv);
    }
    RETURN(st);
}

/* ---- Video processing queries ----------------------------------------------------------- */

/* One filter besides scaling and colour conversion: deinterlacing, by bob. *num is the room
 * the client gave on the way in (libva's convention); too little is VA_STATUS_ERROR_MAX_NUM_EXCEEDED
 * with the count needed. */
static VAStatus sva_QueryVideoProcFilters(VADriverContextP ctx, VAContextID context,
                                          VAProcFilterType *filters, unsigned int *num)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c || c->config.entrypoint != VAEntrypointVideoProc)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    if (!num || !filters)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    if (!drv->deinterlaces) {
        *num = 0;
        RETURN(VA_STATUS_SUCCESS);
    }
    if (*num < 1) {
        *num = 1;
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    filters[0] = VAProcFilterDeinterlacing;
    *num = 1;
    RETURN(VA_STATUS_SUCCESS);
}

static VAStatus sva_QueryVideoProcFilterCaps(VADriverContextP ctx, VAContextID context,
                                             VAProcFilterType type, void *caps, unsigned int *num)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c || c->config.entrypoint != VAEntrypointVideoProc)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    if (!num || !caps)
        RETURN(VA_STATUS_ERROR_INVALID_PARAMETER);
    if (type != VAProcFilterDeinterlacing || !drv->deinterlaces) {
        *num = 0;
        RETURN(VA_STATUS_ERROR_UNSUPPORTED_FILTER);
    }
    if (*num < 1) {
        *num = 1;
        RETURN(VA_STATUS_ERROR_MAX_NUM_EXCEEDED);
    }
    VAProcFilterCapDeinterlacing *deinterlacing = caps;
    memset(deinterlacing, 0, sizeof(*deinterlacing));
    deinterlacing[0].type = VAProcDeinterlacingBob;
    *num = 1;
    RETURN(VA_STATUS_SUCCESS);
}

static uint32_t vpp_fourccs[32];
static VAProcColorStandardType vpp_standards[] = {
    VAProcColorStandardBT601, VAProcColorStandardBT709, VAProcColorStandardSRGB,
    VAProcColorStandardSMPTE170M, VAProcColorStandardBT470BG,
};

static VAStatus sva_QueryVideoProcPipelineCaps(VADriverContextP ctx, VAContextID context,
                                               VABufferID *filters, unsigned int num_filters,
                                               VAProcPipelineCaps *caps)
{
    LOCKED(ctx);
    sva_context *c = sva_table_get(&drv->contexts, context);
    if (!c || c->config.entrypoint != VAEntrypointVideoProc)
        RETURN(VA_STATUS_ERROR_INVALID_CONTEXT);
    /* bob, the one filter, needs no reference picture (deinterlace_vaapi sizes its queue from
     * the reference counts below: 0 and 0, so one picture out per picture in, undelayed) */
    if (num_filters > 1)
        RETURN(refuse_vpp(VA_STATUS_ERROR_UNSUPPORTED_FILTER, "more than one filter in a pipeline"));
    if (num_filters == 1) {
        unsigned flags;
        VAStatus st = filters ? deinterlacing_of(drv, filters[0], &flags) : VA_STATUS_ERROR_INVALID_PARAMETER;
        if (st != VA_STATUS_SUCCESS)
            RETURN(st);
    }
    for (int i = 0; i < sva_num_image_fourccs && i < 32; i++)
        vpp_fourccs[i] = sva_image_fourccs[i];
    caps->pipeline_flags = 0;
    caps->filter_flags = 0;
    caps->num_forward_references = 0;
    caps->num_backward_references = 0;
    /* The lists point to SoftVA's own static arrays, as Intel's drivers do: FFmpeg 5.1
     * (vaapi_vpp_colour_properties) passes an uninitialised VAProcPipelineCaps, so the
     * pointers it holds must never be written through. */
    caps->input_color_standards = vpp_standards;
    caps->num_input_color_standards = (uint32_t)(sizeof(vpp_standards) / sizeof(vpp_standards[0]));
    caps->output_color_standards = vpp_standards;
    caps->num_output_color_standards = caps->num_input_color_standards;
    caps->rotation_flags = (1u << VA_ROTATION_NONE) | (1u << VA_ROTATION_90) | (1u << VA_ROTATION_180) |
                           (1u << VA_ROTATION_270);
    caps->blend_flags = VA_BLEND_GLOBAL_ALPHA | VA_BLEND_PREMULTIPLIED_ALPHA;
    caps->mirror_flags = VA_MIRROR_HORIZONTAL | VA_MIRROR_VERTICAL;
    caps->num_additional_outputs = 0;
    caps->input_pixel_format = vpp_fourccs;
    caps->num_input_pixel_formats = (uint32_t)sva_num_image_fourccs;
    caps->output_pixel_format = vpp_fourccs;
    caps->num_output_pixel_formats = (uint32_t)sva_num_image_fourccs;
    caps->max_input_width = SVA_MAX_WIDTH;
    caps->max_input_height = SVA_MAX_HEIGHT;
    caps->min_input_width = 1;
    caps->min_input_height = 1;
    caps->max_output_width = SVA_MAX_WIDTH;
    caps->max_output_height = SVA_MAX_HEIGHT;
    caps->min_output_width = 1;
    caps->min_output_height = 1;
    RETURN(VA_STATUS_SUCCESS);
}

/* ---- Entries SoftVA does not implement -------------------------------------------------- */

static VAStatus sva_QuerySurfaceError(VADriverContextP ctx, VASurfaceID s, VAStatus e, void **info)
{ (void)ctx; (void)s; (void)e; (void)info; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_PutSurface(VADriverContextP ctx, VASurfaceID s, void *draw, short sx, short sy,
                               unsigned short sw, unsigned short sh, short dx, short dy,
                               unsigned short dw, unsigned short dh, VARectangle *clip,
                               unsigned int nclip, unsigned int flags)
{ (void)ctx; (void)s; (void)draw; (void)sx; (void)sy; (void)sw; (void)sh; (void)dx; (void)dy;
  (void)dw; (void)dh; (void)clip; (void)nclip; (void)flags; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_SetImagePalette(VADriverContextP ctx, VAImageID i, unsigned char *p)
{ (void)ctx; (void)i; (void)p; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_QuerySubpictureFormats(VADriverContextP ctx, VAImageFormat *l, unsigned int *f, unsigned int *n)
{ (void)ctx; (void)l; (void)f; *n = 0; return VA_STATUS_SUCCESS; }
static VAStatus sva_CreateSubpicture(VADriverContextP ctx, VAImageID i, VASubpictureID *s)
{ (void)ctx; (void)i; (void)s; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_DestroySubpicture(VADriverContextP ctx, VASubpictureID s)
{ (void)ctx; (void)s; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_SetSubpictureImage(VADriverContextP ctx, VASubpictureID s, VAImageID i)
{ (void)ctx; (void)s; (void)i; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_SetSubpictureChromakey(VADriverContextP ctx, VASubpictureID s, unsigned int a,
                                           unsigned int b, unsigned int c)
{ (void)ctx; (void)s; (void)a; (void)b; (void)c; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_SetSubpictureGlobalAlpha(VADriverContextP ctx, VASubpictureID s, float a)
{ (void)ctx; (void)s; (void)a; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_AssociateSubpicture(VADriverContextP ctx, VASubpictureID s, VASurfaceID *t, int n,
                                        short sx, short sy, unsigned short sw, unsigned short sh,
                                        short dx, short dy, unsigned short dw, unsigned short dh,
                                        unsigned int flags)
{ (void)ctx; (void)s; (void)t; (void)n; (void)sx; (void)sy; (void)sw; (void)sh; (void)dx; (void)dy;
  (void)dw; (void)dh; (void)flags; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_DeassociateSubpicture(VADriverContextP ctx, VASubpictureID s, VASurfaceID *t, int n)
{ (void)ctx; (void)s; (void)t; (void)n; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_QueryDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *l, int *n)
{ (void)ctx; (void)l; *n = 0; return VA_STATUS_SUCCESS; }
static VAStatus sva_GetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *l, int n)
{ (void)ctx; (void)l; (void)n; return VA_STATUS_ERROR_ATTR_NOT_SUPPORTED; }
static VAStatus sva_SetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *l, int n)
{ (void)ctx; (void)l; (void)n; return VA_STATUS_ERROR_ATTR_NOT_SUPPORTED; }
static VAStatus sva_LockSurface(VADriverContextP ctx, VASurfaceID s, unsigned int *a, unsigned int *b,
                                unsigned int *c, unsigned int *d, unsigned int *e, unsigned int *f,
                                unsigned int *g, unsigned int *h, void **i)
{ (void)ctx; (void)s; (void)a; (void)b; (void)c; (void)d; (void)e; (void)f; (void)g; (void)h; (void)i;
  return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_UnlockSurface(VADriverContextP ctx, VASurfaceID s)
{ (void)ctx; (void)s; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_GetSurfaceAttributes(VADriverContextP ctx, VAConfigID c, VASurfaceAttrib *l, unsigned int n)
{ (void)ctx; (void)c; (void)l; (void)n; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_AcquireBufferHandle(VADriverContextP ctx, VABufferID b, VABufferInfo *i)
{ (void)ctx; (void)b; (void)i; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_ReleaseBufferHandle(VADriverContextP ctx, VABufferID b)
{ (void)ctx; (void)b; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_CreateMFContext(VADriverContextP ctx, VAMFContextID *m)
{ (void)ctx; (void)m; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_MFAddContext(VADriverContextP ctx, VAMFContextID m, VAContextID c)
{ (void)ctx; (void)m; (void)c; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_MFReleaseContext(VADriverContextP ctx, VAMFContextID m, VAContextID c)
{ (void)ctx; (void)m; (void)c; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_MFSubmit(VADriverContextP ctx, VAMFContextID m, VAContextID *c, int n)
{ (void)ctx; (void)m; (void)c; (void)n; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_CreateBuffer2(VADriverContextP ctx, VAContextID c, VABufferType t, unsigned int w,
                                  unsigned int h, unsigned int *u, unsigned int *p, VABufferID *b)
{ (void)ctx; (void)c; (void)t; (void)w; (void)h; (void)u; (void)p; (void)b; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_QueryProcessingRate(VADriverContextP ctx, VAConfigID c, VAProcessingRateParameter *p,
                                        unsigned int *r)
{ (void)ctx; (void)c; (void)p; (void)r; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_ExportSurfaceHandle(VADriverContextP ctx, VASurfaceID s, uint32_t m, uint32_t f, void *d)
{ (void)ctx; (void)s; (void)m; (void)f; (void)d; return VA_STATUS_ERROR_UNIMPLEMENTED; }
static VAStatus sva_Copy(VADriverContextP ctx, VACopyObject *d, VACopyObject *s, VACopyOption o)
{ (void)ctx; (void)d; (void)s; (void)o; return VA_STATUS_ERROR_UNIMPLEMENTED; }

/* ---- Init ------------------------------------------------------------------------------- */

static void read_environment(sva_driver *drv)
{
    const char *counters = getenv("SOFTVA_COUNTERS");
    if (counters)
        snprintf(drv->counters_path, sizeof(drv->counters_path), "%s", counters);
    drv->fail_after = -1;
    drv->fail_status = VA_STATUS_ERROR_HW_BUSY;
    drv->fail_ops = SVA_OP_DECODE | SVA_OP_ENCODE | SVA_OP_VPP;
    const char *after = getenv("SOFTVA_FAIL_AFTER");
    if (after && *after) {
        char *end;
        long long n = strtoll(after, &end, 10);
        if (!*end && n >= 0)
            drv->fail_after = n;
        else
            fprintf(stderr, "softva: ignoring SOFTVA_FAIL_AFTER=%s (not a count)\n", after);
    }
    const char *status = getenv("SOFTVA_FAIL_STATUS");
    if (status && *status) {
        VAStatus s;
        if (sva_status_from_name(status, &s) == 0 && s != VA_STATUS_SUCCESS)
            drv->fail_status = s;
        else
            fprintf(stderr, "softva: ignoring SOFTVA_FAIL_STATUS=%s (not a VA_STATUS_ERROR_* name)\n", status);
    }
    drv->deinterlaces = 1;
    const char *filters = getenv("SOFTVA_VPP_FILTERS");
    if (filters && *filters) {
        if (strcmp(filters, "none") == 0)
            drv->deinterlaces = 0;
        else if (strcmp(filters, "deinterlacing") != 0)
            fprintf(stderr, "softva: ignoring SOFTVA_VPP_FILTERS=%s (none or deinterlacing)\n", filters);
    }
    const char *on = getenv("SOFTVA_FAIL_ON");
    if (on && *on) {
        unsigned mask = 0;
        if (strstr(on, "decode")) mask |= SVA_OP_DECODE;
        if (strstr(on, "encode")) mask |= SVA_OP_ENCODE;
        if (strstr(on, "vpp")) mask |= SVA_OP_VPP;
        if (mask) drv->fail_ops = mask;
    }
}

__attribute__((visibility("default")))
VAStatus __vaDriverInit_1_17(VADriverContextP ctx);

VAStatus __vaDriverInit_1_17(VADriverContextP ctx)
{
    sva_driver *drv = calloc(1, sizeof(*drv));
    if (!drv)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    pthread_mutex_init(&drv->lock, NULL);
    drv->configs.base = 0x01000000;
    drv->contexts.base = 0x02000000;
    drv->surfaces.base = 0x04000000;
    drv->buffers.base = 0x08000000;
    drv->images.base = 0x0c000000;
    read_environment(drv);

    const char *profile = getenv("SOFTVA_PROFILE");
    if (profile && *profile) {
        char err[600];
        if (sva_personality_load(profile, &drv->personality, err, sizeof(err)) < 0) {
            fprintf(stderr, "softva: %s\n", err);
            pthread_mutex_destroy(&drv->lock);
            free(drv);
            return VA_STATUS_ERROR_OPERATION_FAILED;
        }
        if (drv->personality.init_failure) {
            VAStatus st = drv->personality.init_status;
            fprintf(stderr, "softva: personality %s: initialisation fails with %s (%s)\n",
                    drv->personality.name, sva_status_name(st), drv->personality.init_message);
            sva_personality_free(&drv->personality);
            pthread_mutex_destroy(&drv->lock);
            free(drv);
            return st;
        }
        snprintf(drv->vendor, sizeof(drv->vendor), "%s", drv->personality.vendor[0] ?
                 drv->personality.vendor : drv->personality.name);
    } else {
        snprintf(drv->vendor, sizeof(drv->vendor), "SoftVA CPU driver 0.1 (libjpeg-turbo)");
    }

    ctx->pDriverData = drv;
    ctx->version_major = VA_MAJOR_VERSION;
    ctx->version_minor = VA_MINOR_VERSION;
    ctx->max_profiles = SVA_MAX_PROFILES;
    ctx->max_entrypoints = SVA_MAX_ENTRYPOINTS;
    ctx->max_attributes = VAConfigAttribTypeMax;
    ctx->max_image_formats = sva_num_image_fourccs;
    ctx->max_subpic_formats = 1;
    ctx->max_display_attributes = 1;
    ctx->str_vendor = drv->vendor;

    struct VADriverVTable *vt = ctx->vtable;
    vt->vaTerminate = sva_Terminate;
    vt->vaQueryConfigProfiles = sva_QueryConfigProfiles;
    vt->vaQueryConfigEntrypoints = sva_QueryConfigEntrypoints;
    vt->vaGetConfigAttributes = sva_GetConfigAttributes;
    vt->vaCreateConfig = sva_CreateConfig;
    vt->vaDestroyConfig = sva_DestroyConfig;
    vt->vaQueryConfigAttributes = sva_QueryConfigAttributes;
    vt->vaCreateSurfaces = sva_CreateSurfaces;
    vt->vaDestroySurfaces = sva_DestroySurfaces;
    vt->vaCreateContext = sva_CreateContext;
    vt->vaDestroyContext = sva_DestroyContext;
    vt->vaCreateBuffer = sva_CreateBuffer;
    vt->vaBufferSetNumElements = sva_BufferSetNumElements;
    vt->vaMapBuffer = sva_MapBuffer;
    vt->vaUnmapBuffer = sva_UnmapBuffer;
    vt->vaDestroyBuffer = sva_DestroyBuffer;
    vt->vaBeginPicture = sva_BeginPicture;
    vt->vaRenderPicture = sva_RenderPicture;
    vt->vaEndPicture = sva_EndPicture;
    vt->vaSyncSurface = sva_SyncSurface;
    vt->vaQuerySurfaceStatus = sva_QuerySurfaceStatus;
    vt->vaQuerySurfaceError = sva_QuerySurfaceError;
    vt->vaPutSurface = sva_PutSurface;
    vt->vaQueryImageFormats = sva_QueryImageFormats;
    vt->vaCreateImage = sva_CreateImage;
    vt->vaDeriveImage = sva_DeriveImage;
    vt->vaDestroyImage = sva_DestroyImage;
    vt->vaSetImagePalette = sva_SetImagePalette;
    vt->vaGetImage = sva_GetImage;
    vt->vaPutImage = sva_PutImage;
    vt->vaQuerySubpictureFormats = sva_QuerySubpictureFormats;
    vt->vaCreateSubpicture = sva_CreateSubpicture;
    vt->vaDestroySubpicture = sva_DestroySubpicture;
    vt->vaSetSubpictureImage = sva_SetSubpictureImage;
    vt->vaSetSubpictureChromakey = sva_SetSubpictureChromakey;
    vt->vaSetSubpictureGlobalAlpha = sva_SetSubpictureGlobalAlpha;
    vt->vaAssociateSubpicture = sva_AssociateSubpicture;
    vt->vaDeassociateSubpicture = sva_DeassociateSubpicture;
    vt->vaQueryDisplayAttributes = sva_QueryDisplayAttributes;
    vt->vaGetDisplayAttributes = sva_GetDisplayAttributes;
    vt->vaSetDisplayAttributes = sva_SetDisplayAttributes;
    vt->vaBufferInfo = sva_BufferInfo;
    vt->vaLockSurface = sva_LockSurface;
    vt->vaUnlockSurface = sva_UnlockSurface;
    vt->vaGetSurfaceAttributes = sva_GetSurfaceAttributes;
    vt->vaCreateSurfaces2 = sva_CreateSurfaces2;
    vt->vaQuerySurfaceAttributes = sva_QuerySurfaceAttributes;
    vt->vaAcquireBufferHandle = sva_AcquireBufferHandle;
    vt->vaReleaseBufferHandle = sva_ReleaseBufferHandle;
    vt->vaCreateMFContext = sva_CreateMFContext;
    vt->vaMFAddContext = sva_MFAddContext;
    vt->vaMFReleaseContext = sva_MFReleaseContext;
    vt->vaMFSubmit = sva_MFSubmit;
    vt->vaCreateBuffer2 = sva_CreateBuffer2;
    vt->vaQueryProcessingRate = sva_QueryProcessingRate;
    vt->vaExportSurfaceHandle = sva_ExportSurfaceHandle;
    vt->vaSyncSurface2 = sva_SyncSurface2;
    vt->vaSyncBuffer = sva_SyncBuffer;
    vt->vaCopy = sva_Copy;

    struct VADriverVTableVPP *vpp = ctx->vtable_vpp;
    if (vpp) {
        vpp->vaQueryVideoProcFilters = sva_QueryVideoProcFilters;
        vpp->vaQueryVideoProcFilterCaps = sva_QueryVideoProcFilterCaps;
        vpp->vaQueryVideoProcPipelineCaps = sva_QueryVideoProcPipelineCaps;
    }
    sva_counters_write(drv);
    return VA_STATUS_SUCCESS;
}
