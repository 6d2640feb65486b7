/*
 * SoftVA H.264: bit writer, bit reader and emulation prevention (ITU-T H.264 7.2, 7.3.1, 7.4.1).
 */
#include <stdlib.h>
#include <string.h>

#include "softva_h264_bits.h"

static int reserve(sva_bitwriter *w, size_t bytes)
{
    if (w->failed)
        return -1;
    if (bytes <= w->cap)
        return 0;
    size_t ncap = w->cap ? w->cap : 256;
    while (ncap < bytes) ncap *= 2;
    uint8_t *p = realloc(w->data, ncap);
    if (!p) {
        w->failed = 1;
        return -1;
    }
    memset(p + w->cap, 0, ncap - w->cap);
    w->data = p;
    w->cap = ncap;
    return 0;
}

void sva_bw_free(sva_bitwriter *w)
{
    free(w->data);
    memset(w, 0, sizeof(*w));
}

void sva_bw_put(sva_bitwriter *w, uint32_t value, int count)
{
    if (reserve(w, (w->bits + (size_t)count + 7) / 8 + 1) < 0)
        return;
    for (int i = count - 1; i >= 0; i--) {
        size_t byte = w->bits >> 3;
        int shift = 7 - (int)(w->bits & 7);
        if ((value >> i) & 1)
            w->data[byte] |= (uint8_t)(1u << shift);
        else
            w->data[byte] &= (uint8_t)~(1u << shift);
        w->bits++;
    }
}

void sva_bw_ue(sva_bitwriter *w, uint32_t value)
{
    uint64_t v = (uint64_t)value + 1;
    int len = 0;
    while ((v >> len) > 1) len++;
    sva_bw_put(w, 0, len);
    /* the value with its leading 1, in len + 1 bits (at most 33: split) */
    if (len + 1 > 32) {
        sva_bw_put(w, (uint32_t)(v >> 32), len + 1 - 32);
        sva_bw_put(w, (uint32_t)v, 32);
    } else {
        sva_bw_put(w, (uint32_t)v, len + 1);
    }
}

void sva_bw_se(sva_bitwriter *w, int32_t value)
{
    uint32_t mapped = value > 0 ? (uint32_t)value * 2 - 1 : (uint32_t)(-(int64_t)value) * 2;
    sva_bw_ue(w, mapped);
}

void sva_bw_bytes(sva_bitwriter *w, const uint8_t *src, size_t n)
{
    if (reserve(w, w->bits / 8 + n + 1) < 0)
        return;
    memcpy(w->data + w->bits / 8, src, n);
    w->bits += 8 * n;
}

void sva_bw_align_zero(sva_bitwriter *w)
{
    while (w->bits & 7)
        sva_bw_put(w, 0, 1);
}

void sva_bw_trailing(sva_bitwriter *w)
{
    sva_bw_put(w, 1, 1);
    sva_bw_align_zero(w);
}

uint32_t sva_br_u(sva_bitreader *r, int count)
{
    uint32_t v = 0;
    for (int i = 0; i < count; i++) {
        int bit = 0;
        if (r->pos < r->bits)
            bit = (r->data[r->pos >> 3] >> (7 - (r->pos & 7))) & 1;
        else
            r->overrun = 1;
        r->pos++;
        v = (v << 1) | (uint32_t)bit;
    }
    return v;
}

uint32_t sva_br_ue(sva_bitreader *r)
{
    int zeros = 0;
    while (sva_br_u(r, 1) == 0) {
        if (++zeros > 31 || r->overrun) {
            r->overrun = 1;
            return 0;
        }
    }
    return ((1u << zeros) - 1) + sva_br_u(r, zeros);
}

int32_t sva_br_se(sva_bitreader *r)
{
    uint32_t k = sva_br_ue(r);
    return (k & 1) ? (int32_t)((k + 1) / 2) : -(int32_t)(k / 2);
}

size_t sva_h264_unescape(const uint8_t *in, size_t n, uint8_t *out, size_t within, size_t *removed)
{
    size_t o = 0, zeros = 0, dropped = 0;
    for (size_t i = 0; i < n; i++) {
        if (zeros >= 2 && in[i] == 0x03) {
            if (i < within) dropped++;
            zeros = 0;
            continue;
        }
        zeros = in[i] == 0 ? zeros + 1 : 0;
        out[o++] = in[i];
    }
    if (removed) *removed = dropped;
    return o;
}

int sva_h264_append_nal(uint8_t **out, size_t *len, size_t *cap, int start_code_len,
                        const uint8_t *rbsp, size_t bytes)
{
    /* worst case: one emulation prevention byte for every two input bytes */
    size_t need = *len + 4 + bytes + bytes / 2 + 1;
    if (need > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap < need) ncap *= 2;
        uint8_t *p = realloc(*out, ncap);
        if (!p)
            return -1;
        *out = p;
        *cap = ncap;
    }
    uint8_t *d = *out + *len;
    size_t o = 0, zeros = 0;
    if (start_code_len == 4) d[o++] = 0;
    if (start_code_len >= 3) { d[o++] = 0; d[o++] = 0; d[o++] = 1; }
    for (size_t i = 0; i < bytes; i++) {
        if (zeros >= 2 && rbsp[i] <= 3) {
            d[o++] = 0x03;
            zeros = 0;
        }
        zeros = rbsp[i] == 0 ? zeros + 1 : 0;
        d[o++] = rbsp[i];
    }
    *len += o;
    return 0;
}
