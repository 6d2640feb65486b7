/*
 * SoftVA pixel formats: layouts of surfaces and images in host memory, and the one
 * conversion/scaling routine used by vaGetImage, vaPutImage and video processing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "softva_internal.h"

#ifndef VA_FOURCC_I420
#define VA_FOURCC_I420 0x30323449
#endif

const uint32_t sva_image_fourccs[] = {
    VA_FOURCC_NV12, VA_FOURCC_P010, VA_FOURCC_I420, VA_FOURCC_YV12, VA_FOURCC_IYUV,
    VA_FOURCC_422H, VA_FOURCC_444P, VA_FOURCC_Y800,
    VA_FOURCC_BGRA, VA_FOURCC_RGBA, VA_FOURCC_BGRX, VA_FOURCC_RGBX,
    VA_FOURCC_ARGB, VA_FOURCC_ABGR, VA_FOURCC_XRGB, VA_FOURCC_XBGR,
};
const int sva_num_image_fourccs = (int)(sizeof(sva_image_fourccs) / sizeof(sva_image_fourccs[0]));

int sva_format_is_supported(uint32_t fourcc)
{
    for (int i = 0; i < sva_num_image_fourccs; i++)
        if (sva_image_fourccs[i] == fourcc)
            return 1;
    return 0;
}

int sva_format_is_rgb(uint32_t fourcc)
{
    switch (fourcc) {
    case VA_FOURCC_BGRA: case VA_FOURCC_RGBA: case VA_FOURCC_BGRX: case VA_FOURCC_RGBX:
    case VA_FOURCC_ARGB: case VA_FOURCC_ABGR: case VA_FOURCC_XRGB: case VA_FOURCC_XBGR:
        return 1;
    default:
        return 0;
    }
}

int sva_format_depth(uint32_t fourcc)
{
    return fourcc == VA_FOURCC_P010 ? 10 : 8;
}

uint32_t sva_rt_format_for_fourcc(uint32_t fourcc)
{
    switch (fourcc) {
    case VA_FOURCC_NV12: case VA_FOURCC_I420: case VA_FOURCC_YV12: case VA_FOURCC_IYUV:
        return VA_RT_FORMAT_YUV420;
    case VA_FOURCC_P010: return VA_RT_FORMAT_YUV420_10;
    case VA_FOURCC_422H: return VA_RT_FORMAT_YUV422;
    case VA_FOURCC_444P: return VA_RT_FORMAT_YUV444;
    case VA_FOURCC_Y800: return VA_RT_FORMAT_YUV400;
    default:
        return sva_format_is_rgb(fourcc) ? VA_RT_FORMAT_RGB32 : 0;
    }
}

uint32_t sva_default_fourcc_for_rt(uint32_t rt)
{
    switch (rt) {
    case VA_RT_FORMAT_YUV420: return VA_FOURCC_NV12;
    case VA_RT_FORMAT_YUV420_10: return VA_FOURCC_P010;
    case VA_RT_FORMAT_YUV422: return VA_FOURCC_422H;
    case VA_RT_FORMAT_YUV444: return VA_FOURCC_444P;
    case VA_RT_FORMAT_YUV400: return VA_FOURCC_Y800;
    case VA_RT_FORMAT_RGB32: return VA_FOURCC_BGRA;
    default: return 0;
    }
}

void sva_chroma_subsampling(uint32_t fourcc, int *hsub, int *vsub)
{
    *hsub = 0; *vsub = 0;
    switch (fourcc) {
    case VA_FOURCC_NV12: case VA_FOURCC_P010: case VA_FOURCC_I420: case VA_FOURCC_YV12:
    case VA_FOURCC_IYUV:
        *hsub = 1; *vsub = 1; break;
    case VA_FOURCC_422H:
        *hsub = 1; break;
    default:
        break;
    }
}

static uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

int sva_layout_make(uint32_t fourcc, int width, int height, sva_layout *out)
{
    if (width <= 0 || height <= 0 || width > 16384 || height > 16384 || !sva_format_is_supported(fourcc))
        return -1;
    memset(out, 0, sizeof(*out));
    out->fourcc = fourcc;
    out->width = width;
    out->height = height;
    uint32_t w = (uint32_t)width, h = (uint32_t)height;
    uint32_t cw = (w + 1) / 2, ch = (h + 1) / 2;
    switch (fourcc) {
    case VA_FOURCC_NV12:
    case VA_FOURCC_P010: {
        uint32_t bps = fourcc == VA_FOURCC_P010 ? 2 : 1;
        out->num_planes = 2;
        out->pitches[0] = align_up(w * bps, 64);
        out->pitches[1] = align_up(cw * 2 * bps, 64);
        out->offsets[1] = out->pitches[0] * h;
        out->data_size = out->offsets[1] + out->pitches[1] * ch;
        break;
    }
    case VA_FOURCC_I420: case VA_FOURCC_YV12: case VA_FOURCC_IYUV:
    case VA_FOURCC_422H: case VA_FOURCC_444P: {
        uint32_t pcw = fourcc == VA_FOURCC_444P ? w : cw;
        uint32_t pch = (fourcc == VA_FOURCC_444P || fourcc == VA_FOURCC_422H) ? h : ch;
        out->num_planes = 3;
        out->pitches[0] = align_up(w, 64);
        out->pitches[1] = out->pitches[2] = align_up(pcw, 64);
        out->offsets[1] = out->pitches[0] * h;
        out->offsets[2] = out->offsets[1] + out->pitches[1] * pch;
        out->data_size = out->offsets[2] + out->pitches[2] * pch;
        break;
    }
    case VA_FOURCC_Y800:
        out->num_planes = 1;
        out->pitches[0] = align_up(w, 64);
        out->data_size = out->pitches[0] * h;
        break;
    default: /* 32-bit RGB */
        out->num_planes = 1;
        out->pitches[0] = align_up(w * 4, 64);
        out->data_size = out->pitches[0] * h;
        break;
    }
    return 0;
}

static sva_plane plane_at(uint8_t *base, int stride, int step, int bytes, int shift, int w, int h)
{
    sva_plane p = { base, stride, step, bytes, shift, w, h, 1 };
    return p;
}

void sva_planes_of(const sva_layout *l, uint8_t *data, sva_plane planes[4])
{
    memset(planes, 0, 4 * sizeof(sva_plane));
    int w = l->width, h = l->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    uint8_t *p0 = data + l->offsets[0], *p1 = data + l->offsets[1], *p2 = data + l->offsets[2];
    int s0 = (int)l->pitches[0], s1 = (int)l->pitches[1], s2 = (int)l->pitches[2];
    switch (l->fourcc) {
    case VA_FOURCC_NV12:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        planes[1] = plane_at(p1, s1, 2, 1, 0, cw, ch);
        planes[2] = plane_at(p1 + 1, s1, 2, 1, 0, cw, ch);
        break;
    case VA_FOURCC_P010:
        planes[0] = plane_at(p0, s0, 2, 2, 6, w, h);
        planes[1] = plane_at(p1, s1, 4, 2, 6, cw, ch);
        planes[2] = plane_at(p1 + 2, s1, 4, 2, 6, cw, ch);
        break;
    case VA_FOURCC_I420: case VA_FOURCC_IYUV:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        planes[1] = plane_at(p1, s1, 1, 1, 0, cw, ch);
        planes[2] = plane_at(p2, s2, 1, 1, 0, cw, ch);
        break;
    case VA_FOURCC_YV12:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        planes[2] = plane_at(p1, s1, 1, 1, 0, cw, ch);
        planes[1] = plane_at(p2, s2, 1, 1, 0, cw, ch);
        break;
    case VA_FOURCC_422H:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        planes[1] = plane_at(p1, s1, 1, 1, 0, cw, h);
        planes[2] = plane_at(p2, s2, 1, 1, 0, cw, h);
        break;
    case VA_FOURCC_444P:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        planes[1] = plane_at(p1, s1, 1, 1, 0, w, h);
        planes[2] = plane_at(p2, s2, 1, 1, 0, w, h);
        break;
    case VA_FOURCC_Y800:
        planes[0] = plane_at(p0, s0, 1, 1, 0, w, h);
        break;
    default: {
        /* byte offsets of R, G, B, A in memory */
        int r, g, b, a, has_alpha;
        switch (l->fourcc) {
        case VA_FOURCC_BGRA: b = 0; g = 1; r = 2; a = 3; has_alpha = 1; break;
        case VA_FOURCC_BGRX: b = 0; g = 1; r = 2; a = 3; has_alpha = 0; break;
        case VA_FOURCC_RGBA: r = 0; g = 1; b = 2; a = 3; has_alpha = 1; break;
        case VA_FOURCC_RGBX: r = 0; g = 1; b = 2; a = 3; has_alpha = 0; break;
        case VA_FOURCC_ARGB: a = 0; r = 1; g = 2; b = 3; has_alpha = 1; break;
        case VA_FOURCC_XRGB: a = 0; r = 1; g = 2; b = 3; has_alpha = 0; break;
        case VA_FOURCC_ABGR: a = 0; b = 1; g = 2; r = 3; has_alpha = 1; break;
        default:             a = 0; b = 1; g = 2; r = 3; has_alpha = 0; break; /* XBGR */
        }
        planes[0] = plane_at(p0 + r, s0, 4, 1, 0, w, h);
        planes[1] = plane_at(p0 + g, s0, 4, 1, 0, w, h);
        planes[2] = plane_at(p0 + b, s0, 4, 1, 0, w, h);
        planes[3] = plane_at(p0 + a, s0, 4, 1, 0, w, h);
        planes[3].present = has_alpha;
        /* X formats still have the byte; it is written as 255 */
        break;
    }
    }
}

VAImageFormat sva_image_format(uint32_t fourcc)
{
    VAImageFormat f;
    memset(&f, 0, sizeof(f));
    f.fourcc = fourcc;
    f.byte_order = VA_LSB_FIRST;
    switch (fourcc) {
    case VA_FOURCC_NV12: case VA_FOURCC_I420: case VA_FOURCC_YV12: case VA_FOURCC_IYUV:
        f.bits_per_pixel = 12; break;
    case VA_FOURCC_P010: f.bits_per_pixel = 24; break;
    case VA_FOURCC_422H: f.bits_per_pixel = 16; break;
    case VA_FOURCC_444P: f.bits_per_pixel = 24; break;
    case VA_FOURCC_Y800: f.bits_per_pixel = 8; break;
    default: {
        /* masks of the 32-bit little-endian pixel value */
        uint32_t r, g, b, a;
        switch (fourcc) {
        case VA_FOURCC_BGRA: case VA_FOURCC_BGRX: r = 0x00ff0000; g = 0x0000ff00; b = 0x000000ff; a = 0xff000000; break;
        case VA_FOURCC_RGBA: case VA_FOURCC_RGBX: r = 0x000000ff; g = 0x0000ff00; b = 0x00ff0000; a = 0xff000000; break;
        case VA_FOURCC_ARGB: case VA_FOURCC_XRGB: r = 0x0000ff00; g = 0x00ff0000; b = 0xff000000; a = 0x000000ff; break;
        default:             r = 0xff000000; g = 0x00ff0000; b = 0x0000ff00; a = 0x000000ff; break;
        }
        int alpha = fourcc == VA_FOURCC_BGRA || fourcc == VA_FOURCC_RGBA || fourcc == VA_FOURCC_ARGB || fourcc == VA_FOURCC_ABGR;
        f.bits_per_pixel = 32;
        f.depth = alpha ? 32 : 24;
        f.red_mask = r; f.green_mask = g; f.blue_mask = b; f.alpha_mask = alpha ? a : 0;
        break;
    }
    }
    return f;
}

/* ---- Sample access ---------------------------------------------------------------------- */

static inline float get_sample(const sva_plane *p, int x, int y)
{
    const uint8_t *s = p->base + (size_t)y * p->stride + (size_t)x * p->step;
    if (p->bytes == 1)
        return (float)s[0];
    uint16_t v = (uint16_t)(s[0] | (s[1] << 8));
    return (float)(v >> p->shift) / 4.0f; /* 10-bit to the 8-bit scale */
}

static inline void put_sample(const sva_plane *p, int x, int y, float v)
{
    uint8_t *d = p->base + (size_t)y * p->stride + (size_t)x * p->step;
    if (p->bytes == 1) {
        int i = (int)lrintf(v);
        d[0] = (uint8_t)(i < 0 ? 0 : i > 255 ? 255 : i);
    } else {
        int i = (int)lrintf(v * 4.0f);
        i = i < 0 ? 0 : i > 1023 ? 1023 : i;
        uint16_t w = (uint16_t)(i << p->shift);
        d[0] = (uint8_t)(w & 0xff);
        d[1] = (uint8_t)(w >> 8);
    }
}

/* ---- Separable tent-filter resampling --------------------------------------------------- */

typedef struct sva_filter {
    int taps;
    int *first;      /* per output position: first input index */
    float *weights;  /* per output position: taps weights */
} sva_filter;

/* Output sample i (0..out_n-1) sits at input coordinate (i + 0.5) * scale - 0.5 + in_off,
 * where scale = in_n / out_n. Input indices are clamped to [0, in_limit-1]. */
static int filter_make(sva_filter *f, double in_start, double in_n, int out_n, int in_limit)
{
    double scale = in_n / out_n;
    double radius = scale > 1.0 ? scale : 1.0;
    int taps = (int)ceil(radius) * 2 + 1;
    f->taps = taps;
    f->first = malloc(sizeof(int) * (size_t)out_n);
    f->weights = malloc(sizeof(float) * (size_t)out_n * (size_t)taps);
    if (!f->first || !f->weights)
        return -1;
    for (int i = 0; i < out_n; i++) {
        double center = in_start + (i + 0.5) * scale - 0.5;
        int first = (int)floor(center - radius) + 1;
        double sum = 0;
        float *w = f->weights + (size_t)i * taps;
        for (int k = 0; k < taps; k++) {
            double d = fabs(first + k - center) / radius;
            double wt = d < 1.0 ? 1.0 - d : 0.0;
            w[k] = (float)wt;
            sum += wt;
        }
        for (int k = 0; k < taps; k++)
            w[k] = sum > 0 ? (float)(w[k] / sum) : (k == 0 ? 1.0f : 0.0f);
        f->first[i] = first;
    }
    (void)in_limit;
    return 0;
}

static void filter_free(sva_filter *f)
{
    free(f->first);
    free(f->weights);
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Resamples a region of a component into a float buffer of out_w x out_h. */
static int resample(const sva_plane *src, double sx, double sy, double sw, double sh,
                    float *out, int out_w, int out_h)
{
    sva_filter fx, fy;
    memset(&fx, 0, sizeof(fx));
    memset(&fy, 0, sizeof(fy));
    int in_y0 = clampi((int)floor(sy) - (int)ceil(sh / out_h) - 2, 0, src->height - 1);
    int in_y1 = clampi((int)ceil(sy + sh) + (int)ceil(sh / out_h) + 2, 0, src->height - 1);
    int rows = in_y1 - in_y0 + 1;
    float *tmp = malloc(sizeof(float) * (size_t)rows * (size_t)out_w);
    int rc = -1;
    if (!tmp || filter_make(&fx, sx, sw, out_w, src->width) < 0 || filter_make(&fy, sy, sh, out_h, src->height) < 0)
        goto done;
    /* horizontal pass over the rows that the vertical pass needs */
    for (int y = 0; y < rows; y++) {
        int iy = in_y0 + y;
        float *t = tmp + (size_t)y * out_w;
        for (int x = 0; x < out_w; x++) {
            const float *w = fx.weights + (size_t)x * fx.taps;
            int first = fx.first[x];
            float acc = 0;
            for (int k = 0; k < fx.taps; k++) {
                if (w[k] == 0.0f)
                    continue;
                acc += w[k] * get_sample(src, clampi(first + k, 0, src->width - 1), iy);
            }
            t[x] = acc;
        }
    }
    for (int y = 0; y < out_h; y++) {
        const float *w = fy.weights + (size_t)y * fy.taps;
        int first = fy.first[y];
        float *o = out + (size_t)y * out_w;
        for (int x = 0; x < out_w; x++)
            o[x] = 0;
        for (int k = 0; k < fy.taps; k++) {
            if (w[k] == 0.0f)
                continue;
            int iy = clampi(first + k, 0, src->height - 1);
            iy = clampi(iy, in_y0, in_y1) - in_y0;
            const float *t = tmp + (size_t)iy * out_w;
            for (int x = 0; x < out_w; x++)
                o[x] += w[k] * t[x];
        }
    }
    rc = 0;
done:
    filter_free(&fx);
    filter_free(&fy);
    free(tmp);
    return rc;
}

/* ---- Colour ----------------------------------------------------------------------------- */

static void yuv_coefficients(int bt709, float *kr, float *kb)
{
    if (bt709) { *kr = 0.2126f; *kb = 0.0722f; }
    else       { *kr = 0.299f;  *kb = 0.114f; }
}

static inline void yuv_to_rgb(sva_colour c, float y, float u, float v, float *r, float *g, float *b)
{
    float kr, kb;
    yuv_coefficients(c.bt709, &kr, &kb);
    float kg = 1.0f - kr - kb;
    float yn, un, vn;
    if (c.full_range) { yn = y / 255.0f; un = (u - 128.0f) / 255.0f; vn = (v - 128.0f) / 255.0f; }
    else { yn = (y - 16.0f) / 219.0f; un = (u - 128.0f) / 224.0f; vn = (v - 128.0f) / 224.0f; }
    float rn = yn + 2.0f * (1.0f - kr) * vn;
    float bn = yn + 2.0f * (1.0f - kb) * un;
    float gn = (yn - kr * rn - kb * bn) / kg;
    *r = rn * 255.0f; *g = gn * 255.0f; *b = bn * 255.0f;
}

static inline void rgb_to_yuv(sva_colour c, float r, float g, float b, float *y, float *u, float *v)
{
    float kr, kb;
    yuv_coefficients(c.bt709, &kr, &kb);
    float kg = 1.0f - kr - kb;
    float rn = r / 255.0f, gn = g / 255.0f, bn = b / 255.0f;
    float yn = kr * rn + kg * gn + kb * bn;
    float un = (bn - yn) / (2.0f * (1.0f - kb));
    float vn = (rn - yn) / (2.0f * (1.0f - kr));
    if (c.full_range) { *y = yn * 255.0f; *u = un * 255.0f + 128.0f; *v = vn * 255.0f + 128.0f; }
    else { *y = 16.0f + yn * 219.0f; *u = 128.0f + un * 224.0f; *v = 128.0f + vn * 224.0f; }
}

void sva_rgb_to_yuv(sva_colour c, float r, float g, float b, float *y, float *u, float *v)
{
    rgb_to_yuv(c, r, g, b, y, u, v);
}

/* ---- Conversion ------------------------------------------------------------------------- */

static int rect_inside(VARectangle r, int w, int h)
{
    return r.x >= 0 && r.y >= 0 && r.width > 0 && r.height > 0 &&
           r.x + (int)r.width <= w && r.y + (int)r.height <= h;
}

static VAStatus copy_same_format(const sva_layout *sl, uint8_t *src, VARectangle sr,
                                 const sva_layout *dl, uint8_t *dst, VARectangle dr)
{
    sva_plane sp[4], dp[4];
    sva_planes_of(sl, src, sp);
    sva_planes_of(dl, dst, dp);
    int hsub, vsub;
    sva_chroma_subsampling(sl->fourcc, &hsub, &vsub);
    if (sva_format_is_rgb(sl->fourcc)) {
        for (int y = 0; y < sr.height; y++)
            memcpy(dst + dl->offsets[0] + (size_t)(dr.y + y) * dl->pitches[0] + (size_t)dr.x * 4,
                   src + sl->offsets[0] + (size_t)(sr.y + y) * sl->pitches[0] + (size_t)sr.x * 4,
                   (size_t)sr.width * 4);
        return VA_STATUS_SUCCESS;
    }
    for (int c = 0; c < 3; c++) {
        if (!sp[c].present)
            continue;
        int cs = c ? hsub : 0, vs = c ? vsub : 0;
        int x0s = sr.x >> cs, y0s = sr.y >> vs, x0d = dr.x >> cs, y0d = dr.y >> vs;
        int w = (sr.x + sr.width + (1 << cs) - 1) / (1 << cs) - x0s;
        int h = (sr.y + sr.height + (1 << vs) - 1) / (1 << vs) - y0s;
        if (x0d + w > dp[c].width) w = dp[c].width - x0d;
        if (y0d + h > dp[c].height) h = dp[c].height - y0d;
        for (int y = 0; y < h; y++) {
            const uint8_t *s = sp[c].base + (size_t)(y0s + y) * sp[c].stride + (size_t)x0s * sp[c].step;
            uint8_t *d = dp[c].base + (size_t)(y0d + y) * dp[c].stride + (size_t)x0d * dp[c].step;
            if (sp[c].step == sp[c].bytes) {
                memcpy(d, s, (size_t)w * sp[c].bytes);
            } else {
                for (int x = 0; x < w; x++)
                    memcpy(d + (size_t)x * sp[c].step, s + (size_t)x * sp[c].step, (size_t)sp[c].bytes);
            }
        }
    }
    return VA_STATUS_SUCCESS;
}

VAStatus sva_convert(const sva_layout *sl, uint8_t *src, VARectangle sr, sva_colour sc,
                     const sva_layout *dl, uint8_t *dst, VARectangle dr, sva_colour dc)
{
    if (!rect_inside(sr, sl->width, sl->height) || !rect_inside(dr, dl->width, dl->height))
        return VA_STATUS_ERROR_INVALID_PARAMETER;

    /* Exact copy: same format, same size, no colour change. */
    if (sl->fourcc == dl->fourcc && sr.width == dr.width && sr.height == dr.height &&
        (sva_format_is_rgb(sl->fourcc) || ((sr.x | sr.y | dr.x | dr.y) & 1) == 0 ||
         sl->fourcc == VA_FOURCC_444P || sl->fourcc == VA_FOURCC_Y800))
        return copy_same_format(sl, src, sr, dl, dst, dr);

    sva_plane sp[4], dp[4];
    sva_planes_of(sl, src, sp);
    sva_planes_of(dl, dst, dp);
    int s_rgb = sva_format_is_rgb(sl->fourcc), d_rgb = sva_format_is_rgb(dl->fourcc);
    int shs, svs, dhs, dvs;
    sva_chroma_subsampling(sl->fourcc, &shs, &svs);
    sva_chroma_subsampling(dl->fourcc, &dhs, &dvs);
    int ow = dr.width, oh = dr.height;
    VAStatus status = VA_STATUS_ERROR_ALLOCATION_FAILED;

    if (!s_rgb && !d_rgb) {
        /* YUV to YUV: each component from its own plane, at its own resolution. */
        for (int c = 0; c < 3; c++) {
            int hs = c ? dhs : 0, vs = c ? dvs : 0;
            int ox = dr.x >> hs, oy = dr.y >> vs;
            int cw = ((dr.x + ow + (1 << hs) - 1) >> hs) - ox;
            int ch = ((dr.y + oh + (1 << vs) - 1) >> vs) - oy;
            if (ox + cw > dp[c].width) cw = dp[c].width - ox;
            if (oy + ch > dp[c].height) ch = dp[c].height - oy;
            if (!dp[c].present || cw <= 0 || ch <= 0)
                continue;
            float *buf = malloc(sizeof(float) * (size_t)cw * (size_t)ch);
            if (!buf)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            if (c && !sp[c].present) {
                for (size_t i = 0; i < (size_t)cw * ch; i++)
                    buf[i] = 128.0f;
            } else {
                int ihs = c ? shs : 0, ivs = c ? svs : 0;
                /* source rectangle in this component's own sample grid; the output
                 * region in the destination's component grid covers cw x ch samples */
                double sx = sr.x / (double)(1 << ihs), sy = sr.y / (double)(1 << ivs);
                double sw = sr.width / (double)(1 << ihs), sh = sr.height / (double)(1 << ivs);
                double tw = ow / (double)(1 << hs), th = oh / (double)(1 << vs);
                /* stretch the source range so that cw x ch output samples cover it proportionally */
                sw = sw * cw / tw;
                sh = sh * ch / th;
                if (resample(&sp[c], sx, sy, sw, sh, buf, cw, ch) < 0) {
                    free(buf);
                    return VA_STATUS_ERROR_ALLOCATION_FAILED;
                }
                if (c && sc.full_range != dc.full_range) {
                    for (size_t i = 0; i < (size_t)cw * ch; i++)
                        buf[i] = dc.full_range ? (buf[i] - 128.0f) * 255.0f / 224.0f + 128.0f
                                               : (buf[i] - 128.0f) * 224.0f / 255.0f + 128.0f;
                } else if (!c && sc.full_range != dc.full_range) {
                    for (size_t i = 0; i < (size_t)cw * ch; i++)
                        buf[i] = dc.full_range ? (buf[i] - 16.0f) * 255.0f / 219.0f
                                               : buf[i] * 219.0f / 255.0f + 16.0f;
                }
            }
            for (int y = 0; y < ch; y++)
                for (int x = 0; x < cw; x++)
                    put_sample(&dp[c], ox + x, oy + y, buf[(size_t)y * cw + x]);
            free(buf);
        }
        return VA_STATUS_SUCCESS;
    }

    /* Any conversion that involves RGB goes through full-resolution R,G,B or Y,U,V planes
     * at the output size. */
    size_t n = (size_t)ow * (size_t)oh;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n), *c3 = malloc(sizeof(float) * n);
    float *alpha = NULL;
    if (!a || !b || !c3)
        goto out;
    float *comp[3] = { a, b, c3 };
    for (int c = 0; c < 3; c++) {
        if (!s_rgb && c && !sp[c].present) {
            for (size_t i = 0; i < n; i++)
                comp[c][i] = 128.0f;
            continue;
        }
        int ihs = (!s_rgb && c) ? shs : 0, ivs = (!s_rgb && c) ? svs : 0;
        if (resample(&sp[c], sr.x / (double)(1 << ihs), sr.y / (double)(1 << ivs),
                     sr.width / (double)(1 << ihs), sr.height / (double)(1 << ivs), comp[c], ow, oh) < 0)
            goto out;
    }
    if (s_rgb && d_rgb && sp[3].present && dp[3].present) {
        alpha = malloc(sizeof(float) * n);
        if (!alpha || resample(&sp[3], sr.x, sr.y, sr.width, sr.height, alpha, ow, oh) < 0)
            goto out;
    }
    if (!s_rgb && d_rgb) {
        for (size_t i = 0; i < n; i++)
            yuv_to_rgb(sc, a[i], b[i], c3[i], &a[i], &b[i], &c3[i]);
    } else if (s_rgb && !d_rgb) {
        for (size_t i = 0; i < n; i++)
            rgb_to_yuv(dc, a[i], b[i], c3[i], &a[i], &b[i], &c3[i]);
    }
    if (d_rgb) {
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                size_t i = (size_t)y * ow + x;
                put_sample(&dp[0], dr.x + x, dr.y + y, a[i]);
                put_sample(&dp[1], dr.x + x, dr.y + y, b[i]);
                put_sample(&dp[2], dr.x + x, dr.y + y, c3[i]);
                put_sample(&dp[3], dr.x + x, dr.y + y, alpha ? alpha[i] : 255.0f);
            }
    } else {
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++)
                put_sample(&dp[0], dr.x + x, dr.y + y, a[(size_t)y * ow + x]);
        /* chroma: average the full-resolution samples of each chroma cell */
        for (int c = 1; c < 3; c++) {
            if (!dp[c].present)
                continue;
            int ox = dr.x >> dhs, oy = dr.y >> dvs;
            int cw = ((dr.x + ow + (1 << dhs) - 1) >> dhs) - ox;
            int ch = ((dr.y + oh + (1 << dvs) - 1) >> dvs) - oy;
            float *src_c = comp[c];
            for (int y = 0; y < ch && oy + y < dp[c].height; y++)
                for (int x = 0; x < cw && ox + x < dp[c].width; x++) {
                    float sum = 0; int cnt = 0;
                    for (int dy = 0; dy < (1 << dvs); dy++)
                        for (int dx = 0; dx < (1 << dhs); dx++) {
                            int fx = ((ox + x) << dhs) + dx - dr.x, fy = ((oy + y) << dvs) + dy - dr.y;
                            if (fx < 0 || fy < 0 || fx >= ow || fy >= oh)
                                continue;
                            sum += src_c[(size_t)fy * ow + fx];
                            cnt++;
                        }
                    if (cnt)
                        put_sample(&dp[c], ox + x, oy + y, sum / cnt);
                }
        }
    }
    status = VA_STATUS_SUCCESS;
out:
    free(a); free(b); free(c3); free(alpha);
    return status;
}

int sva_plane_scale(const sva_plane *src, const sva_plane *dst)
{
    if (src->width == dst->width && src->height == dst->height) {
        if (src->bytes == 1 && dst->bytes == 1) {
            for (int y = 0; y < dst->height; y++) {
                const uint8_t *s = src->base + (size_t)y * src->stride;
                uint8_t *d = dst->base + (size_t)y * dst->stride;
                if (src->step == 1 && dst->step == 1) {
                    memcpy(d, s, (size_t)dst->width);
                } else {
                    for (int x = 0; x < dst->width; x++)
                        d[(size_t)x * dst->step] = s[(size_t)x * src->step];
                }
            }
            return 0;
        }
        for (int y = 0; y < dst->height; y++)
            for (int x = 0; x < dst->width; x++)
                put_sample(dst, x, y, get_sample(src, x, y));
        return 0;
    }
    float *buf = malloc(sizeof(float) * (size_t)dst->width * (size_t)dst->height);
    if (!buf)
        return -1;
    if (resample(src, 0, 0, src->width, src->height, buf, dst->width, dst->height) < 0) {
        free(buf);
        return -1;
    }
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++)
            put_sample(dst, x, y, buf[(size_t)y * dst->width + x]);
    free(buf);
    return 0;
}

void sva_plane_fill(const sva_plane *dst, float value)
{
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++)
            put_sample(dst, x, y, value);
}

int sva_grow(void **p, unsigned *cap, unsigned need, size_t elem)
{
    if (need <= *cap)
        return 0;
    unsigned ncap = *cap ? *cap * 2 : 16;
    while (ncap < need) ncap *= 2;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = ncap;
    return 0;
}
