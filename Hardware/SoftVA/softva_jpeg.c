/*
 * SoftVA JPEG baseline: decode rebuilds a JPEG stream from the VA buffers (picture parameters,
 * quantisation tables, Huffman tables, slice parameters and entropy-coded slice data) and decodes
 * it with libjpeg into the surface; encode compresses the surface with libjpeg using the tables
 * from the VA buffers and writes the client's packed header followed by the entropy-coded scan.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "softva_internal.h"

/* zigzag index -> natural (row-major) index */
static const int zigzag_to_natural[64] = {
     0,  1,  8, 16,  9,  2,  3, 10, 17, 24, 32, 25, 18, 11,  4,  5,
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,  6,  7, 14, 21, 28,
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
};

/* ITU-T T.81 Annex K tables, used when the client sends none. Quantisation tables in zigzag order. */
static const uint8_t std_lum_quant_zz[64] = {
    16, 11, 12, 14, 12, 10, 16, 14, 13, 14, 18, 17, 16, 19, 24, 40,
    26, 24, 22, 22, 24, 49, 35, 37, 29, 40, 58, 51, 61, 60, 57, 51,
    56, 55, 64, 72, 92, 78, 64, 68, 87, 69, 55, 56, 80, 109, 81, 87,
    95, 98, 103, 104, 103, 62, 77, 113, 121, 112, 100, 120, 92, 101, 103, 99,
};
static const uint8_t std_chroma_quant_zz[64] = {
    17, 18, 18, 24, 21, 24, 47, 26, 26, 47, 99, 66, 56, 66, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
};
static const uint8_t std_dc_lum_bits[16] = { 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t std_dc_chroma_bits[16] = { 0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0 };
static const uint8_t std_dc_vals[12] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
static const uint8_t std_ac_lum_bits[16] = { 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d };
static const uint8_t std_ac_lum_vals[162] = {
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
    0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
};
static const uint8_t std_ac_chroma_bits[16] = { 0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77 };
static const uint8_t std_ac_chroma_vals[162] = {
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
    0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
    0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
    0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
    0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
    0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
};

static void standard_huffman(VAHuffmanTableBufferJPEGBaseline *h)
{
    memset(h, 0, sizeof(*h));
    for (int t = 0; t < 2; t++) {
        h->load_huffman_table[t] = 1;
        memcpy(h->huffman_table[t].num_dc_codes, t ? std_dc_chroma_bits : std_dc_lum_bits, 16);
        memcpy(h->huffman_table[t].dc_values, std_dc_vals, 12);
        memcpy(h->huffman_table[t].num_ac_codes, t ? std_ac_chroma_bits : std_ac_lum_bits, 16);
        memcpy(h->huffman_table[t].ac_values, t ? std_ac_chroma_vals : std_ac_lum_vals, 162);
    }
}

static int count_codes(const uint8_t bits[16])
{
    int n = 0;
    for (int i = 0; i < 16; i++) n += bits[i];
    return n;
}

/* ---- libjpeg error handling ------------------------------------------------------------- */

typedef struct sva_jpeg_error {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} sva_jpeg_error;

static void on_error_exit(j_common_ptr cinfo)
{
    sva_jpeg_error *e = (sva_jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, e->message);
    longjmp(e->jump, 1);
}

static void on_output_message(j_common_ptr cinfo)
{
    (void)cinfo; /* warnings (corrupt data recovered) are not printed */
}

/* ---- Byte writer ------------------------------------------------------------------------ */

typedef struct bytes { uint8_t *p; size_t len, cap; int failed; } bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (b->failed) return;
    if (b->len + n > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        while (ncap < b->len + n) ncap *= 2;
        uint8_t *np = realloc(b->p, ncap);
        if (!np) { b->failed = 1; return; }
        b->p = np; b->cap = ncap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}
static void put8(bytes *b, unsigned v) { uint8_t c = (uint8_t)v; put(b, &c, 1); }
static void put16(bytes *b, unsigned v) { put8(b, v >> 8); put8(b, v & 0xff); }

/* ---- Decode ----------------------------------------------------------------------------- */

static VAStatus build_stream(const sva_jpeg_decode *d, bytes *out)
{
    const VAPictureParameterBufferJPEGBaseline *pic = &d->picture;
    int n = pic->num_components;
    if (n != 1 && n != 3)
        return VA_STATUS_ERROR_UNIMPLEMENTED; /* 2- and 4-component JPEGs are not supported */
    if (!d->have_iq)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    VAHuffmanTableBufferJPEGBaseline huff;
    if (d->have_huffman) huff = d->huffman; else standard_huffman(&huff);
    const VASliceParameterBufferJPEGBaseline *s = &d->slice;
    if (s->num_components != n)
        return VA_STATUS_ERROR_UNIMPLEMENTED; /* non-interleaved (multi-scan) images */

    put16(out, 0xFFD8);
    for (int t = 0; t < 4; t++) {
        if (!d->iq.load_quantiser_table[t]) continue;
        put16(out, 0xFFDB); put16(out, 67); put8(out, (unsigned)t);
        put(out, d->iq.quantiser_table[t], 64);
    }
    put16(out, 0xFFC0); put16(out, 8 + 3 * (unsigned)n); put8(out, 8);
    put16(out, pic->picture_height); put16(out, pic->picture_width); put8(out, (unsigned)n);
    for (int i = 0; i < n; i++) {
        put8(out, pic->components[i].component_id);
        put8(out, (unsigned)(pic->components[i].h_sampling_factor << 4) | pic->components[i].v_sampling_factor);
        put8(out, pic->components[i].quantiser_table_selector);
    }
    for (int t = 0; t < 2; t++) {
        if (!huff.load_huffman_table[t]) continue;
        int ndc = count_codes(huff.huffman_table[t].num_dc_codes);
        int nac = count_codes(huff.huffman_table[t].num_ac_codes);
        if (ndc > 12 || nac > 162)
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        put16(out, 0xFFC4); put16(out, 2 + 17 + (unsigned)ndc); put8(out, 0x00 | (unsigned)t);
        put(out, huff.huffman_table[t].num_dc_codes, 16); put(out, huff.huffman_table[t].dc_values, (size_t)ndc);
        put16(out, 0xFFC4); put16(out, 2 + 17 + (unsigned)nac); put8(out, 0x10 | (unsigned)t);
        put(out, huff.huffman_table[t].num_ac_codes, 16); put(out, huff.huffman_table[t].ac_values, (size_t)nac);
    }
    if (s->restart_interval) {
        put16(out, 0xFFDD); put16(out, 4); put16(out, s->restart_interval);
    }
    put16(out, 0xFFDA); put16(out, 6 + 2 * (unsigned)n); put8(out, (unsigned)n);
    for (int i = 0; i < n; i++) {
        put8(out, s->components[i].component_selector);
        put8(out, (unsigned)(s->components[i].dc_table_selector << 4) | s->components[i].ac_table_selector);
    }
    put8(out, 0); put8(out, 63); put8(out, 0);
    put(out, d->data, d->data_len);
    put16(out, 0xFFD9);
    return out->failed ? VA_STATUS_ERROR_ALLOCATION_FAILED : VA_STATUS_SUCCESS;
}

VAStatus sva_jpeg_decode_picture(sva_driver *drv, sva_context *ctx, sva_surface *target)
{
    (void)drv;
    sva_jpeg_decode *d = &ctx->dec;
    if (!d->have_picture || !d->data_len)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    int pw = d->picture.picture_width, ph = d->picture.picture_height;
    if (pw <= 0 || ph <= 0 || pw > target->layout.width || ph > target->layout.height)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    if (sva_format_is_rgb(target->layout.fourcc) || target->layout.fourcc == VA_FOURCC_P010)
        return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT;

    bytes stream = { 0 };
    VAStatus st = build_stream(d, &stream);
    if (st != VA_STATUS_SUCCESS) {
        free(stream.p);
        return st;
    }

    struct jpeg_decompress_struct cinfo;
    sva_jpeg_error jerr;
    uint8_t *planes[3] = { NULL, NULL, NULL };
    int pitch[3] = { 0, 0, 0 };
    JSAMPROW *rows[3] = { NULL, NULL, NULL };
    memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = on_error_exit;
    jerr.mgr.output_message = on_output_message;
    jerr.message[0] = 0;
    if (setjmp(jerr.jump)) {
        fprintf(stderr, "softva: JPEG decode failed: %s\n", jerr.message);
        st = VA_STATUS_ERROR_DECODING_ERROR;
        goto done;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, stream.p, (unsigned long)stream.len);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.raw_data_out = TRUE;
    cinfo.do_fancy_upsampling = FALSE;
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.out_color_space = cinfo.jpeg_color_space;
    jpeg_start_decompress(&cinfo);
    int nc = cinfo.num_components;
    int total_rows_luma = (int)cinfo.total_iMCU_rows * cinfo.max_v_samp_factor * DCTSIZE;
    for (int c = 0; c < nc; c++) {
        jpeg_component_info *ci = &cinfo.comp_info[c];
        pitch[c] = (int)ci->width_in_blocks * DCTSIZE + DCTSIZE * 2;
        int rows_c = total_rows_luma * ci->v_samp_factor / cinfo.max_v_samp_factor;
        planes[c] = malloc((size_t)pitch[c] * (size_t)rows_c);
        rows[c] = malloc(sizeof(JSAMPROW) * (size_t)ci->v_samp_factor * DCTSIZE);
        if (!planes[c] || !rows[c]) {
            st = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto done;
        }
    }
    for (int imcu = 0; imcu < (int)cinfo.total_iMCU_rows; imcu++) {
        JSAMPARRAY arrays[3];
        for (int c = 0; c < nc; c++) {
            int vr = cinfo.comp_info[c].v_samp_factor * DCTSIZE;
            for (int r = 0; r < vr; r++)
                rows[c][r] = planes[c] + (size_t)(imcu * vr + r) * pitch[c];
            arrays[c] = rows[c];
        }
        if (jpeg_read_raw_data(&cinfo, arrays, (JDIMENSION)(cinfo.max_v_samp_factor * DCTSIZE)) == 0) {
            st = VA_STATUS_ERROR_DECODING_ERROR;
            goto done;
        }
    }
    /* write into the surface, resampling chroma where the surface's sampling differs */
    {
        sva_plane dst[4];
        sva_planes_of(&target->layout, target->data, dst);
        int hsub, vsub;
        sva_chroma_subsampling(target->layout.fourcc, &hsub, &vsub);
        for (int c = 0; c < 3; c++) {
            if (!dst[c].present) continue;
            sva_plane region = dst[c];
            region.width = c ? (pw + (1 << hsub) - 1) >> hsub : pw;
            region.height = c ? (ph + (1 << vsub) - 1) >> vsub : ph;
            if (c >= nc) {
                sva_plane_fill(&region, 128.0f);
                continue;
            }
            jpeg_component_info *ci = &cinfo.comp_info[c];
            sva_plane src = { planes[c], pitch[c], 1, 1, 0, (int)ci->downsampled_width,
                              (int)ci->downsampled_height, 1 };
            if (sva_plane_scale(&src, &region) < 0) {
                st = VA_STATUS_ERROR_ALLOCATION_FAILED;
                goto done;
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    st = VA_STATUS_SUCCESS;
done:
    jpeg_destroy_decompress(&cinfo);
    for (int c = 0; c < 3; c++) { free(planes[c]); free(rows[c]); }
    free(stream.p);
    return st;
}

/* ---- Encode ----------------------------------------------------------------------------- */

static void scaled_table(const uint8_t zz[64], int quality, int scale_it, JQUANT_TBL *t)
{
    int scale = quality <= 0 ? 100 : quality < 50 ? 5000 / quality : 200 - 2 * quality;
    for (int k = 0; k < 64; k++) {
        long v = zz[k];
        if (scale_it) {
            v = (v * scale + 50) / 100;
            if (v < 1) v = 1;
            if (v > 255) v = 255;
        }
        if (v < 1) v = 1;
        t->quantval[zigzag_to_natural[k]] = (UINT16)v;
    }
    t->sent_table = FALSE;
}

static void set_huffman(JHUFF_TBL *t, const uint8_t bits[16], const uint8_t *vals, int max_vals)
{
    t->bits[0] = 0;
    int n = 0;
    for (int i = 0; i < 16; i++) { t->bits[i + 1] = bits[i]; n += bits[i]; }
    if (n > max_vals) n = max_vals;
    memset(t->huffval, 0, sizeof(t->huffval));
    memcpy(t->huffval, vals, (size_t)n);
    t->sent_table = FALSE;
}

/* Finds the entropy-coded data: everything after the SOS segment (up to and including EOI). */
static int find_scan(const uint8_t *p, size_t len, size_t *start)
{
    size_t i = 2;
    while (i + 4 <= len) {
        if (p[i] != 0xFF) return -1;
        uint8_t m = p[i + 1];
        size_t seg = ((size_t)p[i + 2] << 8) | p[i + 3];
        if (m == 0xDA) { *start = i + 2 + seg; return *start <= len ? 0 : -1; }
        i += 2 + seg;
    }
    return -1;
}

VAStatus sva_jpeg_encode_picture(sva_driver *drv, sva_context *ctx, sva_surface *src, sva_buffer *coded)
{
    (void)drv;
    sva_jpeg_encode *e = &ctx->enc;
    const VAEncPictureParameterBufferJPEG *pic = &e->picture;
    int w = pic->picture_width, h = pic->picture_height;
    uint32_t fourcc = src->layout.fourcc;
    if (w <= 0 || h <= 0 || w > src->layout.width || h > src->layout.height)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    if (sva_format_is_rgb(fourcc) || fourcc == VA_FOURCC_P010)
        return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT; /* 8-bit YUV input only */
    if (pic->pic_flags.bits.progressive || pic->pic_flags.bits.differential ||
        pic->pic_flags.bits.profile != 0 || (pic->sample_bit_depth && pic->sample_bit_depth != 8))
        return VA_STATUS_ERROR_UNIMPLEMENTED;
    int n = fourcc == VA_FOURCC_Y800 ? 1 : 3;
    if (pic->num_components != n)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    int hsub, vsub;
    sva_chroma_subsampling(fourcc, &hsub, &vsub);

    VAHuffmanTableBufferJPEGBaseline huff;
    if (e->have_huffman) huff = e->huffman; else standard_huffman(&huff);
    for (int t = 0; t < 2; t++)
        if (!huff.load_huffman_table[t]) {
            VAHuffmanTableBufferJPEGBaseline std;
            standard_huffman(&std);
            huff.huffman_table[t] = std.huffman_table[t];
        }
    const uint8_t *lum_q = e->have_qmatrix && e->qmatrix.load_lum_quantiser_matrix ?
                           e->qmatrix.lum_quantiser_matrix : std_lum_quant_zz;
    const uint8_t *chroma_q = e->have_qmatrix && e->qmatrix.load_chroma_quantiser_matrix ?
                              e->qmatrix.chroma_quantiser_matrix : std_chroma_quant_zz;
    /* With a packed header the client wrote its DQT already: use its tables unchanged. */
    int scale_tables = e->header_len == 0;

    struct jpeg_compress_struct cinfo;
    sva_jpeg_error jerr;
    unsigned char *out = NULL;
    unsigned long out_len = 0;
    uint8_t *planes[3] = { NULL, NULL, NULL };
    int pitch[3] = { 0, 0, 0 };
    JSAMPROW *rows[3] = { NULL, NULL, NULL };
    VAStatus st;
    memset(&cinfo, 0, sizeof(cinfo));
    cinfo.err = jpeg_std_error(&jerr.mgr);
    jerr.mgr.error_exit = on_error_exit;
    jerr.mgr.output_message = on_output_message;
    jerr.message[0] = 0;
    if (setjmp(jerr.jump)) {
        fprintf(stderr, "softva: JPEG encode failed: %s\n", jerr.message);
        st = VA_STATUS_ERROR_ENCODING_ERROR;
        goto done;
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &out, &out_len);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = n;
    cinfo.in_color_space = n == 1 ? JCS_GRAYSCALE : JCS_YCbCr;
    jpeg_set_defaults(&cinfo);
    jpeg_set_colorspace(&cinfo, n == 1 ? JCS_GRAYSCALE : JCS_YCbCr);
    cinfo.raw_data_in = TRUE;
    cinfo.optimize_coding = FALSE;
    cinfo.dct_method = JDCT_ISLOW;
    cinfo.write_JFIF_header = FALSE;
    cinfo.write_Adobe_marker = FALSE;
    cinfo.restart_interval = e->have_slice ? e->slice.restart_interval : 0;
    for (int t = 0; t < 2; t++) {
        if (!cinfo.quant_tbl_ptrs[t])
            cinfo.quant_tbl_ptrs[t] = jpeg_alloc_quant_table((j_common_ptr)&cinfo);
        scaled_table(t ? chroma_q : lum_q, pic->quality, scale_tables, cinfo.quant_tbl_ptrs[t]);
        if (!cinfo.dc_huff_tbl_ptrs[t])
            cinfo.dc_huff_tbl_ptrs[t] = jpeg_alloc_huff_table((j_common_ptr)&cinfo);
        if (!cinfo.ac_huff_tbl_ptrs[t])
            cinfo.ac_huff_tbl_ptrs[t] = jpeg_alloc_huff_table((j_common_ptr)&cinfo);
        set_huffman(cinfo.dc_huff_tbl_ptrs[t], huff.huffman_table[t].num_dc_codes, huff.huffman_table[t].dc_values, 12);
        set_huffman(cinfo.ac_huff_tbl_ptrs[t], huff.huffman_table[t].num_ac_codes, huff.huffman_table[t].ac_values, 162);
    }
    for (int c = 0; c < n; c++) {
        jpeg_component_info *ci = &cinfo.comp_info[c];
        ci->component_id = pic->component_id[c];
        ci->h_samp_factor = c == 0 ? 1 << hsub : 1;
        ci->v_samp_factor = c == 0 ? 1 << vsub : 1;
        ci->quant_tbl_no = pic->quantiser_table_selector[c] & 1;
        if (e->have_slice && e->slice.num_components == n) {
            ci->dc_tbl_no = e->slice.components[c].dc_table_selector & 1;
            ci->ac_tbl_no = e->slice.components[c].ac_table_selector & 1;
        } else {
            ci->dc_tbl_no = c > 0;
            ci->ac_tbl_no = c > 0;
        }
    }
    jpeg_start_compress(&cinfo, TRUE);

    /* planar copies padded to whole iMCU rows by repeating the last column and row */
    int max_v = cinfo.max_v_samp_factor;
    int imcu_rows = (h + max_v * DCTSIZE - 1) / (max_v * DCTSIZE);
    sva_plane sp[4];
    sva_planes_of(&src->layout, src->data, sp);
    for (int c = 0; c < n; c++) {
        jpeg_component_info *ci = &cinfo.comp_info[c];
        int cw = c ? (w + (1 << hsub) - 1) >> hsub : w;
        int ch = c ? (h + (1 << vsub) - 1) >> vsub : h;
        pitch[c] = (int)ci->width_in_blocks * DCTSIZE + DCTSIZE * 2;
        int rows_c = imcu_rows * ci->v_samp_factor * DCTSIZE;
        planes[c] = malloc((size_t)pitch[c] * (size_t)rows_c);
        rows[c] = malloc(sizeof(JSAMPROW) * (size_t)ci->v_samp_factor * DCTSIZE);
        if (!planes[c] || !rows[c]) {
            st = VA_STATUS_ERROR_ALLOCATION_FAILED;
            jpeg_abort_compress(&cinfo);
            goto done;
        }
        for (int y = 0; y < rows_c; y++) {
            int sy = y < ch ? y : ch - 1;
            const uint8_t *s = sp[c].base + (size_t)sy * sp[c].stride;
            uint8_t *d = planes[c] + (size_t)y * pitch[c];
            for (int x = 0; x < pitch[c]; x++)
                d[x] = s[(size_t)(x < cw ? x : cw - 1) * sp[c].step];
        }
    }
    for (int imcu = 0; imcu < imcu_rows; imcu++) {
        JSAMPARRAY arrays[3];
        for (int c = 0; c < n; c++) {
            int vr = cinfo.comp_info[c].v_samp_factor * DCTSIZE;
            for (int r = 0; r < vr; r++)
                rows[c][r] = planes[c] + (size_t)(imcu * vr + r) * pitch[c];
            arrays[c] = rows[c];
        }
        jpeg_write_raw_data(&cinfo, arrays, (JDIMENSION)(max_v * DCTSIZE));
    }
    jpeg_finish_compress(&cinfo);

    {
        const uint8_t *header = out;
        size_t header_len = 0, scan_start = 0;
        if (e->header_len) {
            if (find_scan(out, out_len, &scan_start) < 0) {
                st = VA_STATUS_ERROR_ENCODING_ERROR;
                goto done;
            }
            header = e->header;
            header_len = e->header_len;
        }
        size_t scan_len = out_len - scan_start;
        size_t total = header_len + scan_len;
        size_t capacity = (size_t)coded->size * coded->num_elements;
        memset(&coded->segment, 0, sizeof(coded->segment));
        if (total > capacity) {
            coded->segment.status = VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK;
            st = VA_STATUS_ERROR_NOT_ENOUGH_BUFFER;
            goto done;
        }
        memcpy(coded->data, header, header_len);
        memcpy(coded->data + header_len, out + scan_start, scan_len);
        coded->segment.size = (uint32_t)total;
        coded->segment.bit_offset = 0;
        coded->segment.buf = coded->data;
        coded->segment.next = NULL;
    }
    st = VA_STATUS_SUCCESS;
done:
    jpeg_destroy_compress(&cinfo);
    free(out);
    for (int c = 0; c < 3; c++) { free(planes[c]); free(rows[c]); }
    return st;
}
