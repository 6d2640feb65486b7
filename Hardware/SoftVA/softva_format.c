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

void sva_bob(const sva_layout *layout, const uint8_t *src, uint8_t *dst, int luma_rows, int bottom)
{
    int hsub, vsub;
    sva_chroma_subsampling(layout->fourcc, &hsub, &vsub);
    const int wide = sva_format_depth(layout->fourcc) > 8; /* P010: 16-bit little-endian samples */
    if (luma_rows > layout->height) luma_rows = layout->height;
    memcpy(dst, src, layout->data_size);
    for (int i = 0; i < layout->num_planes; i++) {
        const int rows = i == 0 ? luma_rows : (luma_rows + (1 << vsub) - 1) >> vsub;
        const size_t pitch = layout->pitches[i];
        const uint8_t *in = src + layout->offsets[i];
        uint8_t *out = dst + layout->offsets[i];
        for (int y = 0; y < rows; y++) {
            const uint8_t *row = in + (size_t)y * pitch;
            const uint8_t *above = y > 0 ? row - pitch : NULL;
            const uint8_t *below = y + 1 < rows ? row + pitch : NULL;
            if ((y & 1) == bottom || (!above && !below))
                continue;
            if (!above) above = below;
            if (!below) below = above;
            uint8_t *o = out + (size_t)y * pitch;
            if (wide) {
                for (size_t x = 0; x + 1 < pitch; x += 2) {
                    /* P010 keeps its value in the top ten bits: averaged as ten-bit values */
                    unsigned a = (above[x] | (unsigned)above[x + 1] << 8) >> 6, b = (below[x] | (unsigned)below[x + 1] << 8) >> 6;
                    unsigned m = ((a + b + 1) >> 1) << 6;
                    o[x] = (uint8_t)m;
                    o[x + 1] = (uint8_t)(m >> 8);
                }
            } else {
                for (size_t x = 0; x < pitch; x++)
                    o[x] = (uint8_t)((above[x] + below[x] + 1) >> 1);
            }
        }
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

/* Output sample i (0..out_n-1) sits at input coordinate (i + 0.5) * scale - 0.5 + in_start.
 * The kernel's radius is the scale when shrinking, one sample when enlarging. Input indices are
 * clamped to the plane when the filter is applied. */
static int filter_make_scaled(sva_filter *f, double in_start, double scale, int out_n)
{
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
    return 0;
}

static void filter_free(sva_filter *f)
{
    free(f->first);
    free(f->weights);
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Resamples a component into a float buffer of out_w x out_h: output sample (x, y) is centred on
 * input coordinate ((x + 0.5) * x_scale - 0.5 + x_start, (y + 0.5) * y_scale - 0.5 + y_start). */
static int resample_scaled(const sva_plane *src, double x_start, double x_scale, double y_start, double y_scale,
                           float *out, int out_w, int out_h)
{
    sva_filter fx, fy;
    memset(&fx, 0, sizeof(fx));
    memset(&fy, 0, sizeof(fy));
    float *tmp = NULL;
    int rc = -1;
    if (filter_make_scaled(&fx, x_start, x_scale, out_w) < 0 || filter_make_scaled(&fy, y_start, y_scale, out_h) < 0)
        goto done;
    /* the rows the vertical pass reads: filter positions only grow with y */
    int in_y0 = clampi(fy.first[0], 0, src->height - 1);
    int in_y1 = clampi(fy.first[out_h - 1] + fy.taps - 1, 0, src->height - 1);
    int rows = in_y1 - in_y0 + 1;
    tmp = malloc(sizeof(float) * (size_t)rows * (size_t)out_w);
    if (!tmp)
        goto done;
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

/* Resamples the region (sx, sy, sw, sh) of a component into a float buffer of out_w x out_h. */
static int resample(const sva_plane *src, double sx, double sy, double sw, double sh,
                    float *out, int out_w, int out_h)
{
    return resample_scaled(src, sx, sw / out_w, sy, sh / out_h, out, out_w, out_h);
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

/* ---- Layers: rotation, mirroring, clipping and blending ---------------------------------- */

/* How the samples of one target axis read one source axis, in the source component's sample
 * units: target samples k0 .. k0+n-1 read source positions on an evenly spaced grid, in
 * reverse order when the axis is flipped. */
typedef struct axis_map {
    double start, scale;  /* resample_scaled's x_start/x_scale (or y_) for the grid in ascending order */
    int n;
    int flipped;
} axis_map;

/* Target samples k0 .. k0+n-1 of a component with subsampling `sub` (log2) along an axis where
 * the layer occupies [d0, d0 + length) in target pixels; the source region is [s0, s0 + s_length)
 * in source pixels, read from a component with subsampling `src_sub`. */
static axis_map axis_map_make(int k0, int n, int sub, int d0, int length, int s0, int s_length, int src_sub,
                              int flipped)
{
    axis_map m;
    double cell = (double)(1 << sub), src_cell = (double)(1 << src_sub);
    double ratio = (double)s_length / length;  /* source pixels per target pixel */
    /* the target edge where the ascending grid starts, as a fraction of the layer */
    double edge = flipped ? 1.0 - ((k0 + n) * cell - d0) / length : (k0 * cell - d0) / length;
    m.start = (s0 + edge * s_length) / src_cell;
    m.scale = cell * ratio / src_cell;
    m.n = n;
    m.flipped = flipped;
    return m;
}

/* The layer's buffer (source orientation, bw samples a row) and how a target window walks it:
 * target sample (a, b) of the window reads index origin + b * row_step + a * column_step. */
typedef struct window_walk {
    long origin, row_step, column_step;
} window_walk;

/* swap: the source x axis follows the target's y axis (quarter turns). */
static window_walk window_walk_make(int nx, int ny, int swap, int flip_source_x, int flip_source_y)
{
    window_walk w;
    if (!swap) {
        long bw = nx;
        w.column_step = flip_source_x ? -1 : 1;
        w.row_step = flip_source_y ? -bw : bw;
        w.origin = (flip_source_x ? nx - 1 : 0) + (flip_source_y ? (long)(ny - 1) * bw : 0);
    } else {
        long bw = ny;
        w.row_step = flip_source_x ? -1 : 1;
        w.column_step = flip_source_y ? -bw : bw;
        w.origin = (flip_source_x ? ny - 1 : 0) + (flip_source_y ? (long)(nx - 1) * bw : 0);
    }
    return w;
}

/* The target axes that drive the source axes after a clockwise quarter-turn rotation and a
 * mirroring of the rotated picture (VA-API: rotation first, then mirroring). */
typedef struct layer_orientation {
    int swap;                 /* the source x axis follows the target y axis */
    int flip_x, flip_y;       /* the source x / y axis runs against its target axis */
} layer_orientation;

static layer_orientation orientation_of(uint32_t rotation, uint32_t mirror)
{
    int mh = (mirror & VA_MIRROR_HORIZONTAL) != 0, mv = (mirror & VA_MIRROR_VERTICAL) != 0;
    layer_orientation o;
    switch (rotation) {
    case VA_ROTATION_90:  o.swap = 1; o.flip_x = mv;  o.flip_y = !mh; break;
    case VA_ROTATION_180: o.swap = 0; o.flip_x = !mh; o.flip_y = !mv; break;
    case VA_ROTATION_270: o.swap = 1; o.flip_x = !mv; o.flip_y = mh;  break;
    default:              o.swap = 0; o.flip_x = mh;  o.flip_y = mv;  break;
    }
    return o;
}

/* Resamples source component `plane` (subsampling shs, svs) for the target window of nx x ny
 * samples starting at (i0, j0) of a target component with subsampling (dhs, dvs); the result is in
 * source orientation, to be read through window_walk_make(nx, ny, o.swap, o.flip_x, o.flip_y). */
static int resample_for_window(const sva_plane *plane, int shs, int svs, VARectangle sr,
                               int i0, int j0, int nx, int ny, int dhs, int dvs, VARectangle dr,
                               layer_orientation o, float *out)
{
    axis_map mx, my;
    if (!o.swap) {
        mx = axis_map_make(i0, nx, dhs, dr.x, dr.width, sr.x, sr.width, shs, o.flip_x);
        my = axis_map_make(j0, ny, dvs, dr.y, dr.height, sr.y, sr.height, svs, o.flip_y);
    } else {
        mx = axis_map_make(j0, ny, dvs, dr.y, dr.height, sr.x, sr.width, shs, o.flip_x);
        my = axis_map_make(i0, nx, dhs, dr.x, dr.width, sr.y, sr.height, svs, o.flip_y);
    }
    return resample_scaled(plane, mx.start, mx.scale, my.start, my.scale, out, mx.n, my.n);
}

/* The share of target sample k (subsampling sub) that lies in [v0, v1), of the pixels it has
 * inside a picture `limit` pixels long. */
static float coverage(int k, int sub, int v0, int v1, int limit)
{
    int c0 = k << sub, c1 = (k + 1) << sub;
    if (c1 > limit) c1 = limit;
    int lo = c0 > v0 ? c0 : v0, hi = c1 < v1 ? c1 : v1;
    return hi > lo ? (float)(hi - lo) / (float)(c1 - c0) : 0.0f;
}

static inline float range_convert(float v, int chroma, sva_colour from, sva_colour to)
{
    if (from.full_range == to.full_range)
        return v;
    if (chroma)
        return to.full_range ? (v - 128.0f) * 255.0f / 224.0f + 128.0f : (v - 128.0f) * 224.0f / 255.0f + 128.0f;
    return to.full_range ? (v - 16.0f) * 255.0f / 219.0f : v * 219.0f / 255.0f + 16.0f;
}

/* Blends n samples into row y of a target component from x0 on: sample a is
 * values[first + a * step], with opacity alpha_row * alpha_x[a]. */
static void blend_row(const sva_plane *p, int x0, int y, int n, const float *values, long first, long step,
                      const float *alpha_x, float alpha_row)
{
    if (p->bytes == 1) {
        uint8_t *d = p->base + (size_t)y * p->stride + (size_t)x0 * p->step;
        for (int a = 0; a < n; a++, d += p->step) {
            float alpha = alpha_row * alpha_x[a], v = values[first + a * step];
            if (alpha <= 0.0f)
                continue;
            if (alpha < 1.0f)
                v = alpha * v + (1.0f - alpha) * (float)d[0];
            int i = (int)lrintf(v);
            d[0] = (uint8_t)(i < 0 ? 0 : i > 255 ? 255 : i);
        }
        return;
    }
    for (int a = 0; a < n; a++) {
        float alpha = alpha_row * alpha_x[a], v = values[first + a * step];
        if (alpha <= 0.0f)
            continue;
        if (alpha < 1.0f)
            v = alpha * v + (1.0f - alpha) * get_sample(p, x0 + a, y);
        put_sample(p, x0 + a, y, v);
    }
}

/* YUV onto YUV: each target component from the source's own plane, at the target plane's
 * resolution; the layer's opacity is the global alpha (YUV has no alpha channel). */
static VAStatus compose_yuv(const sva_plane *sp, int shs, int svs, VARectangle sr, sva_colour sc,
                            const sva_plane *dp, int dhs, int dvs, int dw, int dh, VARectangle dr, sva_colour dc,
                            int vx0, int vy0, int vx1, int vy1, layer_orientation o, sva_blend blend)
{
    float opacity = blend.replace ? 1.0f : blend.global_alpha;
    for (int c = 0; c < 3; c++) {
        if (!dp[c].present)
            continue;
        int hs = c ? dhs : 0, vs = c ? dvs : 0;
        int i0 = vx0 >> hs, j0 = vy0 >> vs;
        int nx = ((vx1 - 1) >> hs) + 1 - i0, ny = ((vy1 - 1) >> vs) + 1 - j0;
        size_t n = (size_t)nx * (size_t)ny;
        float *buf = malloc(sizeof(float) * n);
        float *cov_x = malloc(sizeof(float) * (size_t)nx), *cov_y = malloc(sizeof(float) * (size_t)ny);
        if (!buf || !cov_x || !cov_y) {
            free(buf); free(cov_x); free(cov_y);
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        if (c && !sp[c].present) {
            for (size_t i = 0; i < n; i++)
                buf[i] = 128.0f;
        } else if (resample_for_window(&sp[c], c ? shs : 0, c ? svs : 0, sr, i0, j0, nx, ny, hs, vs, dr, o, buf) < 0) {
            free(buf); free(cov_x); free(cov_y);
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        for (int a = 0; a < nx; a++)
            cov_x[a] = coverage(i0 + a, hs, vx0, vx1, dw);
        for (int b = 0; b < ny; b++)
            cov_y[b] = coverage(j0 + b, vs, vy0, vy1, dh);
        if (sc.full_range != dc.full_range)
            for (size_t i = 0; i < n; i++)
                buf[i] = range_convert(buf[i], c, sc, dc);
        window_walk walk = window_walk_make(nx, ny, o.swap, o.flip_x, o.flip_y);
        for (int b = 0; b < ny; b++)
            blend_row(&dp[c], i0, j0 + b, nx, buf, walk.origin + (long)b * walk.row_step, walk.column_step,
                      cov_x, opacity * cov_y[b]);
        free(buf); free(cov_x); free(cov_y);
    }
    return VA_STATUS_SUCCESS;
}

/* Anything involving RGB: the layer's components and alpha at the target's full resolution,
 * converted per pixel, blended per pixel (RGB, luma) or per chroma cell (subsampled chroma). */
static VAStatus compose_full_resolution(const sva_layout *sl, const sva_plane *sp, VARectangle sr, sva_colour sc,
                                        const sva_layout *dl, const sva_plane *dp, VARectangle dr, sva_colour dc,
                                        int vx0, int vy0, int vx1, int vy1, layer_orientation o, sva_blend blend)
{
    int s_rgb = sva_format_is_rgb(sl->fourcc), d_rgb = sva_format_is_rgb(dl->fourcc);
    int shs, svs, dhs, dvs;
    sva_chroma_subsampling(sl->fourcc, &shs, &svs);
    sva_chroma_subsampling(dl->fourcc, &dhs, &dvs);
    int nx = vx1 - vx0, ny = vy1 - vy0;
    size_t n = (size_t)nx * (size_t)ny;
    int source_has_alpha = s_rgb && sp[3].present;
    VAStatus status = VA_STATUS_ERROR_ALLOCATION_FAILED;
    float *scratch = malloc(sizeof(float) * n);
    float *comp[4] = { malloc(sizeof(float) * n), malloc(sizeof(float) * n), malloc(sizeof(float) * n),
                       malloc(sizeof(float) * n) };
    if (!scratch || !comp[0] || !comp[1] || !comp[2] || !comp[3])
        goto out;
    window_walk walk = window_walk_make(nx, ny, o.swap, o.flip_x, o.flip_y);
    /* each component resampled in source orientation, then laid out in target orientation */
    for (int c = 0; c < 4; c++) {
        if (c == 3 && !source_has_alpha) {
            for (size_t i = 0; i < n; i++) comp[3][i] = 255.0f;
            continue;
        }
        if (c && c < 3 && !s_rgb && !sp[c].present) {
            for (size_t i = 0; i < n; i++) comp[c][i] = 128.0f;
            continue;
        }
        int chroma = !s_rgb && c;
        if (resample_for_window(&sp[c], chroma ? shs : 0, chroma ? svs : 0, sr, vx0, vy0, nx, ny, 0, 0, dr, o,
                                scratch) < 0)
            goto out;
        for (int b = 0; b < ny; b++) {
            long at = walk.origin + (long)b * walk.row_step;
            float *row = comp[c] + (size_t)b * nx;
            for (int a = 0; a < nx; a++, at += walk.column_step)
                row[a] = scratch[at];
        }
    }
    /* per pixel: the layer's opacity (in scratch), its colour unpremultiplied, then in the target's space */
    for (size_t i = 0; i < n; i++) {
        float source_alpha = comp[3][i] < 0.0f ? 0.0f : comp[3][i] > 255.0f ? 255.0f : comp[3][i];
        float alpha;
        if (blend.replace)
            alpha = 1.0f;
        else if (blend.source_alpha == SVA_SOURCE_ALPHA_IGNORED)
            alpha = blend.global_alpha;
        else
            alpha = blend.global_alpha * source_alpha / 255.0f;
        if (!blend.replace && blend.source_alpha == SVA_SOURCE_ALPHA_PREMULTIPLIED && source_has_alpha) {
            float k = source_alpha > 0.0f ? 255.0f / source_alpha : 0.0f;
            comp[0][i] *= k; comp[1][i] *= k; comp[2][i] *= k;
        }
        scratch[i] = alpha;
        comp[3][i] = source_alpha;
        if (!s_rgb && d_rgb)
            yuv_to_rgb(sc, comp[0][i], comp[1][i], comp[2][i], &comp[0][i], &comp[1][i], &comp[2][i]);
        else if (s_rgb && !d_rgb)
            rgb_to_yuv(dc, comp[0][i], comp[1][i], comp[2][i], &comp[0][i], &comp[1][i], &comp[2][i]);
    }
    int planes_full = d_rgb ? 3 : 1;
    for (int c = 0; c < planes_full; c++) {
        for (int b = 0; b < ny; b++)
            for (int a = 0; a < nx; a++) {
                size_t i = (size_t)b * nx + a;
                float alpha = scratch[i], v = comp[c][i];
                if (alpha >= 1.0f)
                    put_sample(&dp[c], vx0 + a, vy0 + b, v);
                else if (alpha > 0.0f)
                    put_sample(&dp[c], vx0 + a, vy0 + b,
                               alpha * v + (1.0f - alpha) * get_sample(&dp[c], vx0 + a, vy0 + b));
            }
    }
    if (d_rgb) {
        /* alpha: copied when replacing, else "over"; X formats hold 255 */
        for (int b = 0; b < ny; b++)
            for (int a = 0; a < nx; a++) {
                size_t i = (size_t)b * nx + a;
                float out = 255.0f;
                if (dp[3].present)
                    out = blend.replace ? comp[3][i]
                                        : scratch[i] * 255.0f + (1.0f - scratch[i]) * get_sample(&dp[3], vx0 + a, vy0 + b);
                put_sample(&dp[3], vx0 + a, vy0 + b, out);
            }
    } else {
        for (int c = 1; c < 3; c++) {
            if (!dp[c].present)
                continue;
            int i0 = vx0 >> dhs, j0 = vy0 >> dvs;
            int i1 = ((vx1 - 1) >> dhs) + 1, j1 = ((vy1 - 1) >> dvs) + 1;
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++) {
                    /* the pixels of this chroma cell inside the picture, and those the layer covers */
                    int px0 = i << dhs, py0 = j << dvs;
                    int px1 = (i + 1) << dhs, py1 = (j + 1) << dvs;
                    if (px1 > dl->width) px1 = dl->width;
                    if (py1 > dl->height) py1 = dl->height;
                    float weighted = 0.0f, alpha_sum = 0.0f;
                    for (int y = py0 > vy0 ? py0 : vy0; y < (py1 < vy1 ? py1 : vy1); y++)
                        for (int x = px0 > vx0 ? px0 : vx0; x < (px1 < vx1 ? px1 : vx1); x++) {
                            size_t k = (size_t)(y - vy0) * nx + (size_t)(x - vx0);
                            weighted += scratch[k] * comp[c][k];
                            alpha_sum += scratch[k];
                        }
                    float pixels = (float)((px1 - px0) * (py1 - py0));
                    float alpha = alpha_sum / pixels;
                    if (alpha >= 1.0f)
                        put_sample(&dp[c], i, j, weighted / pixels);
                    else if (alpha > 0.0f)
                        put_sample(&dp[c], i, j, weighted / pixels + (1.0f - alpha) * get_sample(&dp[c], i, j));
                }
        }
    }
    status = VA_STATUS_SUCCESS;
out:
    free(scratch);
    for (int c = 0; c < 4; c++) free(comp[c]);
    return status;
}

VAStatus sva_compose(const sva_layout *sl, uint8_t *src, VARectangle sr, sva_colour sc,
                     const sva_layout *dl, uint8_t *dst, VARectangle dr, sva_colour dc,
                     uint32_t rotation, uint32_t mirror, sva_blend blend)
{
    if (!rect_inside(sr, sl->width, sl->height) || dr.width == 0 || dr.height == 0 || rotation > VA_ROTATION_270)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    /* the visible part of the layer; the rest falls outside the target */
    int vx0 = dr.x > 0 ? dr.x : 0, vy0 = dr.y > 0 ? dr.y : 0;
    int vx1 = dr.x + (int)dr.width, vy1 = dr.y + (int)dr.height;
    if (vx1 > dl->width) vx1 = dl->width;
    if (vy1 > dl->height) vy1 = dl->height;
    if (vx0 >= vx1 || vy0 >= vy1)
        return VA_STATUS_SUCCESS;
    if (!blend.replace && blend.global_alpha <= 0.0f)
        return VA_STATUS_SUCCESS;
    sva_plane sp[4], dp[4];
    sva_planes_of(sl, src, sp);
    sva_planes_of(dl, dst, dp);
    layer_orientation o = orientation_of(rotation, mirror);
    if (!sva_format_is_rgb(sl->fourcc) && !sva_format_is_rgb(dl->fourcc)) {
        int shs, svs, dhs, dvs;
        sva_chroma_subsampling(sl->fourcc, &shs, &svs);
        sva_chroma_subsampling(dl->fourcc, &dhs, &dvs);
        return compose_yuv(sp, shs, svs, sr, sc, dp, dhs, dvs, dl->width, dl->height, dr, dc,
                           vx0, vy0, vx1, vy1, o, blend);
    }
    return compose_full_resolution(sl, sp, sr, sc, dl, dp, dr, dc, vx0, vy0, vx1, vy1, o, blend);
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
