/*
 * SoftVA H.264: bit-level writing and reading of NAL unit payloads (RBSP), and conversion between
 * RBSP and the escaped NAL form (emulation prevention bytes). Used by the decoder, which rebuilds
 * parameter sets, and by the encoder, which continues the client's packed slice headers.
 */
#ifndef SOFTVA_H264_BITS_H
#define SOFTVA_H264_BITS_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

/* A growable RBSP being written, most significant bit first. */
typedef struct sva_bitwriter {
    uint8_t *data;
    size_t cap;     /* bytes allocated */
    size_t bits;    /* bits written */
    int failed;     /* an allocation failed: the contents are incomplete */
} sva_bitwriter;

void sva_bw_free(sva_bitwriter *w);
void sva_bw_put(sva_bitwriter *w, uint32_t value, int count); /* count <= 32 */
void sva_bw_ue(sva_bitwriter *w, uint32_t value);             /* ue(v), Exp-Golomb */
void sva_bw_se(sva_bitwriter *w, int32_t value);              /* se(v) */
void sva_bw_bytes(sva_bitwriter *w, const uint8_t *src, size_t n); /* byte aligned only */
void sva_bw_align_zero(sva_bitwriter *w);                     /* zero bits up to a byte boundary */
void sva_bw_trailing(sva_bitwriter *w);                       /* rbsp_trailing_bits() */
static inline int sva_bw_aligned(const sva_bitwriter *w) { return (w->bits & 7) == 0; }

/* Reads an RBSP. Reading past the end gives zero bits and sets overrun. */
typedef struct sva_bitreader {
    const uint8_t *data;
    size_t bits, pos;
    int overrun;
} sva_bitreader;

uint32_t sva_br_u(sva_bitreader *r, int count);
uint32_t sva_br_ue(sva_bitreader *r);
int32_t sva_br_se(sva_bitreader *r);

/* Removes emulation prevention bytes from n bytes of a NAL unit into out (n bytes at least).
 * Returns the RBSP length; *removed (if not NULL) gets how many bytes were removed among the
 * first `within` input bytes. */
size_t sva_h264_unescape(const uint8_t *in, size_t n, uint8_t *out, size_t within, size_t *removed);

/* Appends a start code of start_code_len bytes (0, 3 or 4: 00 00 01 or 00 00 00 01) and the escaped
 * form of an RBSP of `bytes` bytes to out. */
int sva_h264_append_nal(uint8_t **out, size_t *len, size_t *cap, int start_code_len,
                        const uint8_t *rbsp, size_t bytes);

#pragma GCC visibility pop

#endif
