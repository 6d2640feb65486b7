/*
 * SoftVA H.264 encode (VAEntrypointEncSlice and VAEntrypointEncSliceLP), lossless by construction.
 *
 * SoftVA advertises packed sequence, picture, slice, misc and raw-data headers, so a client like
 * FFmpeg's h264_vaapi writes the SPS, PPS, SEI and every slice header itself. SoftVA continues
 * each slice bit-exactly after its packed header: it removes the header's emulation prevention
 * bytes, appends the slice data to the header's last bit (bit_length says where it is) and
 * escapes the whole NAL unit again, so the join is escaped correctly too. A client that sends no
 * packed headers (as FFmpeg does on a device whose EncPackedHeaders attribute is 0) gets headers
 * written by SoftVA from the sequence, picture and slice parameters: an SPS and PPS before each
 * IDR picture, and a slice header for each slice (default reference lists, sliding-window
 * marking: every macroblock being intra, no reference is read).
 *
 * Every macroblock is I_PCM, in I, P and B slices alike, in CAVLC or CABAC as the picture
 * parameters say: the samples go into the stream as they are, and since an I_PCM macroblock has
 * QP 0, the deblocking filter leaves them alone (alpha is 0 at QP 0 with the offsets FFmpeg uses).
 * So a decoder reproduces the source surface bit for bit; that is the test oracle. Coded pictures
 * are raw-size (384 bytes per macroblock plus headers): a correctness device, not a speed device.
 *
 * Rate control, HRD, frame rate, quality and ROI parameters are accepted and recorded but change
 * nothing; reference lists and frame types are the client's (written in its slice headers): all
 * macroblocks being intra, SoftVA reads no reference picture. The reconstructed surface
 * (CurrPic) receives the source picture, which is what a decoder reconstructs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softva_h264_bits.h"
#include "softva_internal.h"

/* A packed header in the order rendered: bytes to copy, or a slice header to continue. */
typedef struct packed_unit {
    uint32_t type;              /* VAEncPackedHeaderParameterBuffer.type, as sent */
    int is_slice;
    size_t offset, len;         /* in the encoder's header store */
    uint32_t bits;              /* bit_length from the VAEncPackedHeaderParameterBuffer */
} packed_unit;

struct sva_h264_encoder {
    /* per sequence: FFmpeg sends the sequence parameters with IDR pictures only */
    int have_sequence;
    VAEncSequenceParameterBufferH264 sequence;
    uint32_t misc_types_seen;   /* bit n: a VAEncMiscParameterBuffer of type n was rendered */

    /* per picture, reset at vaBeginPicture */
    int have_picture;
    VAEncPictureParameterBufferH264 picture;
    VAEncSliceParameterBufferH264 *slices;
    unsigned num_slices, slices_cap;
    packed_unit *units;
    unsigned num_units, units_cap;
    uint8_t *headers; size_t headers_len, headers_cap;
    int packed_pending;         /* a VAEncPackedHeaderParameterBuffer waits for its data */
    uint32_t packed_type, packed_bits;
};

VAStatus sva_h264_encoder_create(sva_context *ctx)
{
    ctx->h264enc = calloc(1, sizeof(*ctx->h264enc));
    return ctx->h264enc ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_ALLOCATION_FAILED;
}

void sva_h264_encoder_destroy(sva_context *ctx)
{
    sva_h264_encoder *e = ctx->h264enc;
    if (!e)
        return;
    free(e->slices);
    free(e->units);
    free(e->headers);
    free(e);
    ctx->h264enc = NULL;
}

void sva_h264_encode_begin(sva_context *ctx)
{
    sva_h264_encoder *e = ctx->h264enc;
    e->have_picture = 0;
    e->num_slices = e->num_units = 0;
    e->headers_len = 0;
    e->packed_pending = 0;
}

static void copy_param(void *dst, size_t dst_size, const sva_buffer *b)
{
    size_t n = b->size < dst_size ? b->size : dst_size;
    memset(dst, 0, dst_size);
    memcpy(dst, b->data, n);
}

VAStatus sva_h264_encode_render(sva_context *ctx, sva_buffer *b)
{
    sva_h264_encoder *e = ctx->h264enc;
    switch (b->type) {
    case VAEncSequenceParameterBufferType:
        copy_param(&e->sequence, sizeof(e->sequence), b);
        e->have_sequence = 1;
        return VA_STATUS_SUCCESS;
    case VAEncPictureParameterBufferType:
        copy_param(&e->picture, sizeof(e->picture), b);
        e->have_picture = 1;
        return VA_STATUS_SUCCESS;
    case VAEncSliceParameterBufferType:
        if (sva_grow((void **)&e->slices, &e->slices_cap, e->num_slices + b->num_elements, sizeof(*e->slices)) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        for (unsigned i = 0; i < b->num_elements; i++) {
            VAEncSliceParameterBufferH264 *s = &e->slices[e->num_slices++];
            memset(s, 0, sizeof(*s));
            memcpy(s, b->data + (size_t)i * b->size, b->size < sizeof(*s) ? b->size : sizeof(*s));
        }
        return VA_STATUS_SUCCESS;
    case VAEncMiscParameterBufferType:
        if (b->size >= sizeof(VAEncMiscParameterBuffer)) {
            uint32_t type = (uint32_t)((VAEncMiscParameterBuffer *)b->data)->type;
            if (type < 32)
                e->misc_types_seen |= 1u << type;
        }
        return VA_STATUS_SUCCESS;
    case VAEncPackedHeaderParameterBufferType: {
        VAEncPackedHeaderParameterBuffer p;
        copy_param(&p, sizeof(p), b);
        e->packed_pending = 1;
        e->packed_type = p.type; /* VAEncPackedHeaderH264_SEI keeps its misc mask: it is not an SPS */
        e->packed_bits = p.bit_length;
        return VA_STATUS_SUCCESS;
    }
    case VAEncPackedHeaderDataBufferType: {
        size_t total = (size_t)b->size * b->num_elements;
        if (!e->packed_pending)
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        e->packed_pending = 0;
        int is_slice = e->packed_type == VAEncPackedHeaderSlice;
        size_t n = (e->packed_bits + 7) / 8;
        if (n > total || (!is_slice && e->packed_bits % 8))
            return VA_STATUS_ERROR_INVALID_PARAMETER; /* only slice headers may end mid-byte */
        if (sva_grow((void **)&e->units, &e->units_cap, e->num_units + 1, sizeof(*e->units)) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        if (e->headers_len + n > e->headers_cap) {
            size_t ncap = e->headers_cap ? e->headers_cap : 1024;
            while (ncap < e->headers_len + n) ncap *= 2;
            uint8_t *h = realloc(e->headers, ncap);
            if (!h)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            e->headers = h;
            e->headers_cap = ncap;
        }
        memcpy(e->headers + e->headers_len, b->data, n);
        e->units[e->num_units++] = (packed_unit){ e->packed_type, is_slice, e->headers_len, n, e->packed_bits };
        e->headers_len += n;
        return VA_STATUS_SUCCESS;
    }
    default:
        return VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE;
    }
}

/* ---- CABAC (ITU-T H.264 9.3.4.2) -------------------------------------------------------- */

/* rangeTabLPS[pStateIdx][qCodIRangeIdx], Table 9-44 */
static const uint8_t range_lps[64][4] = {
    { 128, 176, 208, 240 }, { 128, 167, 197, 227 }, { 128, 158, 187, 216 }, { 123, 150, 178, 205 },
    { 116, 142, 169, 195 }, { 111, 135, 160, 185 }, { 105, 128, 152, 175 }, { 100, 122, 144, 166 },
    {  95, 116, 137, 158 }, {  90, 110, 130, 150 }, {  85, 104, 123, 142 }, {  81,  99, 117, 135 },
    {  77,  94, 111, 128 }, {  73,  89, 105, 122 }, {  69,  85, 100, 116 }, {  66,  80,  95, 110 },
    {  62,  76,  90, 104 }, {  59,  72,  86,  99 }, {  56,  69,  81,  94 }, {  53,  65,  77,  89 },
    {  51,  62,  73,  85 }, {  48,  59,  69,  80 }, {  46,  56,  66,  76 }, {  43,  53,  63,  72 },
    {  41,  50,  59,  69 }, {  39,  48,  56,  65 }, {  37,  45,  54,  62 }, {  35,  43,  51,  59 },
    {  33,  41,  48,  56 }, {  32,  39,  46,  53 }, {  30,  37,  43,  50 }, {  29,  35,  41,  48 },
    {  27,  33,  39,  45 }, {  26,  31,  37,  43 }, {  24,  30,  35,  41 }, {  23,  28,  33,  39 },
    {  22,  27,  32,  37 }, {  21,  26,  30,  35 }, {  20,  24,  29,  33 }, {  19,  23,  27,  31 },
    {  18,  22,  26,  30 }, {  17,  21,  25,  28 }, {  16,  20,  23,  27 }, {  15,  19,  22,  25 },
    {  14,  18,  21,  24 }, {  14,  17,  20,  23 }, {  13,  16,  19,  22 }, {  12,  15,  18,  21 },
    {  12,  14,  17,  20 }, {  11,  14,  16,  19 }, {  11,  13,  15,  18 }, {  10,  12,  15,  17 },
    {  10,  12,  14,  16 }, {   9,  11,  13,  15 }, {   9,  11,  12,  14 }, {   8,  10,  12,  14 },
    {   8,   9,  11,  13 }, {   7,   9,  11,  12 }, {   7,   9,  10,  12 }, {   7,   8,  10,  11 },
    {   6,   8,   9,  11 }, {   6,   7,   9,  10 }, {   6,   7,   8,   9 }, {   2,   2,   2,   2 },
};

/* transIdxLPS, Table 9-45 (transIdxMPS is min(pStateIdx + 1, 62)) */
static const uint8_t trans_lps[64] = {
     0,  0,  1,  2,  2,  4,  4,  5,  6,  7,  8,  9,  9, 11, 11, 12,
    13, 13, 15, 15, 16, 16, 18, 18, 19, 19, 21, 21, 22, 22, 23, 24,
    24, 25, 26, 26, 27, 27, 28, 29, 29, 30, 30, 30, 31, 32, 32, 33,
    33, 33, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 63,
};

/* (m, n) of the contexts an I_PCM macroblock uses: ctxIdx 0-10 (Table 9-12, all slice types)
 * and 11-32 (Tables 9-13 and 9-14, P and B slices, by cabac_init_idc). */
#define NUM_CTX 33
static const int8_t init_i[11][2] = {
    { 20, -15 }, { 2, 54 }, { 3, 74 }, { 20, -15 }, { 2, 54 }, { 3, 74 },
    { -28, 127 }, { -23, 104 }, { -6, 53 }, { -1, 54 }, { 7, 51 },
};
static const int8_t init_pb[3][22][2] = {
    {   /* cabac_init_idc 0: ctxIdx 11..32 */
        { 23, 33 }, { 23, 2 }, { 21, 0 }, { 1, 9 }, { 0, 49 }, { -37, 118 }, { 5, 57 },
        { -13, 78 }, { -11, 65 }, { 1, 62 }, { 12, 49 }, { -4, 73 }, { 17, 50 },
        { 18, 64 }, { 9, 43 }, { 29, 0 }, { 26, 67 }, { 16, 90 }, { 9, 104 }, { -46, 127 },
        { -20, 104 }, { 1, 67 },
    },
    {   /* cabac_init_idc 1 */
        { 22, 25 }, { 34, 0 }, { 16, 0 }, { -2, 9 }, { 4, 41 }, { -29, 118 }, { 2, 65 },
        { -6, 71 }, { -13, 79 }, { 5, 52 }, { 9, 50 }, { -3, 70 }, { 10, 54 },
        { 26, 34 }, { 19, 22 }, { 40, 0 }, { 57, 2 }, { 41, 36 }, { 26, 69 }, { -45, 127 },
        { -15, 101 }, { -4, 76 },
    },
    {   /* cabac_init_idc 2 */
        { 29, 16 }, { 25, 0 }, { 14, 0 }, { -10, 51 }, { -3, 62 }, { -27, 99 }, { 26, 16 },
        { -4, 85 }, { -24, 102 }, { 5, 57 }, { 6, 57 }, { -17, 73 }, { 14, 57 },
        { 20, 40 }, { 20, 10 }, { 29, 0 }, { 54, 0 }, { 37, 42 }, { 12, 97 }, { -32, 127 },
        { -22, 117 }, { -2, 74 },
    },
};

typedef struct cabac {
    sva_bitwriter *w;
    uint32_t low, range;
    uint32_t outstanding;
    int first_bit;
    uint8_t state[NUM_CTX], mps[NUM_CTX];
} cabac;

/* 9.3.1.1: context variables from SliceQPY */
static void cabac_init_contexts(cabac *c, int slice_type, int init_idc, int qp)
{
    if (qp < 0) qp = 0;
    if (qp > 51) qp = 51;
    for (int i = 0; i < NUM_CTX; i++) {
        const int8_t *mn = i < 11 ? init_i[i] : slice_type == 2 ? NULL : init_pb[init_idc][i - 11];
        if (!mn) { c->state[i] = 0; c->mps[i] = 0; continue; }
        int pre = ((mn[0] * qp) >> 4) + mn[1];
        if (pre < 1) pre = 1;
        if (pre > 126) pre = 126;
        if (pre <= 63) { c->state[i] = (uint8_t)(63 - pre); c->mps[i] = 0; }
        else { c->state[i] = (uint8_t)(pre - 64); c->mps[i] = 1; }
    }
}

/* 9.3.4.1: InitEncoder */
static void cabac_init_engine(cabac *c)
{
    c->low = 0;
    c->range = 510;
    c->first_bit = 1;
    c->outstanding = 0;
}

static void put_bit(cabac *c, int b)
{
    if (c->first_bit)
        c->first_bit = 0;
    else
        sva_bw_put(c->w, (uint32_t)b, 1);
    for (; c->outstanding > 0; c->outstanding--)
        sva_bw_put(c->w, (uint32_t)(1 - b), 1);
}

static void renorm(cabac *c)
{
    while (c->range < 256) {
        if (c->low < 256) {
            put_bit(c, 0);
        } else if (c->low >= 512) {
            c->low -= 512;
            put_bit(c, 1);
        } else {
            c->low -= 256;
            c->outstanding++;
        }
        c->range <<= 1;
        c->low <<= 1;
    }
}

static void encode_decision(cabac *c, int ctx, int bin)
{
    uint32_t lps = range_lps[c->state[ctx]][(c->range >> 6) & 3];
    c->range -= lps;
    if (bin != c->mps[ctx]) {
        c->low += c->range;
        c->range = lps;
        if (c->state[ctx] == 0)
            c->mps[ctx] = (uint8_t)(1 - c->mps[ctx]);
        c->state[ctx] = trans_lps[c->state[ctx]];
    } else if (c->state[ctx] < 62) {
        c->state[ctx]++;
    }
    renorm(c);
}

/* 9.3.4.5: EncodeTerminate, with EncodeFlush when bin is 1 (the last bit written is a 1: the
 * rbsp_stop_one_bit at the end of a slice; before I_PCM samples it is followed by alignment). */
static void encode_terminate(cabac *c, int bin)
{
    c->range -= 2;
    if (bin) {
        c->low += c->range;
        c->range = 2;
        renorm(c);
        put_bit(c, (int)((c->low >> 9) & 1));
        sva_bw_put(c->w, ((c->low >> 7) & 3) | 1, 2);
    } else {
        renorm(c);
    }
}

/* ---- Macroblocks ------------------------------------------------------------------------ */

/* Writes the 384 samples of macroblock (mbx, mby): 16x16 luma, then 8x8 Cb, then 8x8 Cr,
 * repeating the last row and column where the surface ends inside the macroblock. */
static void put_pcm_samples(sva_bitwriter *w, const sva_plane planes[3], int mbx, int mby)
{
    uint8_t samples[384];
    int k = 0;
    for (int c = 0; c < 3; c++) {
        int size = c ? 8 : 16;
        const sva_plane *p = &planes[c];
        for (int y = 0; y < size; y++) {
            int sy = mby * size + y;
            if (sy >= p->height) sy = p->height - 1;
            const uint8_t *row = p->base + (size_t)sy * (size_t)p->stride;
            for (int x = 0; x < size; x++) {
                int sx = mbx * size + x;
                if (sx >= p->width) sx = p->width - 1;
                samples[k++] = row[(size_t)sx * (size_t)p->step];
            }
        }
    }
    sva_bw_bytes(w, samples, sizeof(samples));
}

/* slice_data() (7.3.4) of a slice whose macroblocks are all I_PCM. */
static void write_slice_data(sva_bitwriter *w, const VAEncPictureParameterBufferH264 *pic,
                             const VAEncSliceParameterBufferH264 *slice, int width_mbs,
                             const sva_plane planes[3])
{
    const int type = slice->slice_type % 5 == 3 ? 0 : slice->slice_type % 5; /* SP is coded as P */
    const uint32_t first = slice->macroblock_address, count = slice->num_macroblocks;
    if (!pic->pic_fields.bits.entropy_coding_mode_flag) {
        /* CAVLC: mb_skip_run 0, then mb_type I_PCM: 25 in I slices, 5 + 25 in P, 23 + 25 in B */
        for (uint32_t i = 0; i < count; i++) {
            uint32_t mb = first + i;
            if (type != 2)
                sva_bw_ue(w, 0);
            sva_bw_ue(w, type == 2 ? 25 : type == 0 ? 30 : 48);
            sva_bw_align_zero(w);                       /* pcm_alignment_zero_bit */
            put_pcm_samples(w, planes, (int)(mb % (uint32_t)width_mbs), (int)(mb / (uint32_t)width_mbs));
        }
        sva_bw_trailing(w);                             /* rbsp_slice_trailing_bits */
        return;
    }
    while (!sva_bw_aligned(w))
        sva_bw_put(w, 1, 1);                            /* cabac_alignment_one_bit */
    cabac c;
    c.w = w;
    cabac_init_contexts(&c, type, slice->cabac_init_idc, (int)pic->pic_init_qp + slice->slice_qp_delta);
    cabac_init_engine(&c);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t mb = first + i;
        int mbx = (int)(mb % (uint32_t)width_mbs), mby = (int)(mb / (uint32_t)width_mbs);
        /* neighbours in this slice: all I_PCM, never skipped */
        int a = mbx > 0 && mb - 1 >= first;
        int b = mby > 0 && mb - (uint32_t)width_mbs >= first;
        if (type == 0) {
            encode_decision(&c, 11 + a + b, 0);         /* mb_skip_flag */
            encode_decision(&c, 14, 1);                 /* mb_type prefix: intra */
            encode_decision(&c, 17, 1);                 /* suffix bin 0: not I_NxN */
        } else if (type == 1) {
            encode_decision(&c, 24 + a + b, 0);         /* mb_skip_flag */
            static const int bins[6] = { 1, 1, 1, 1, 0, 1 }; /* prefix of intra types in B */
            static const int ctx[6] = { -1, 30, 31, 32, 32, 32 };
            for (int k = 0; k < 6; k++)
                encode_decision(&c, k ? ctx[k] : 27 + a + b, bins[k]);
            encode_decision(&c, 32, 1);                 /* suffix bin 0: not I_NxN */
        } else {
            encode_decision(&c, 3 + a + b, 1);          /* mb_type bin 0: not I_NxN */
        }
        encode_terminate(&c, 1);                        /* I_PCM, then flush */
        sva_bw_align_zero(w);                           /* pcm_alignment_zero_bit */
        put_pcm_samples(w, planes, mbx, mby);
        cabac_init_engine(&c);
        encode_terminate(&c, i + 1 == count);           /* end_of_slice_flag */
    }
    sva_bw_align_zero(w);                               /* after the stop bit the flush wrote */
}

/* ---- Headers SoftVA writes itself (clients that send no packed headers) ------------------ */

static int profile_idc_of(VAProfile profile)
{
    return profile == VAProfileH264High ? 100 : profile == VAProfileH264Main ? 77 : 66;
}

/* seq_parameter_set_rbsp() (7.3.2.1.1) from VAEncSequenceParameterBufferH264. */
static void write_sps(sva_bitwriter *w, VAProfile profile, const VAEncSequenceParameterBufferH264 *q)
{
    int profile_idc = profile_idc_of(profile);
    sva_bw_put(w, 0x67, 8);                             /* nal_ref_idc 3, nal_unit_type 7 */
    sva_bw_put(w, (uint32_t)profile_idc, 8);
    /* Constrained Baseline: constraint_set0 and set1; Main: set1 */
    sva_bw_put(w, profile == VAProfileH264ConstrainedBaseline ? 0xc0 : profile_idc == 77 ? 0x40 : 0, 8);
    sva_bw_put(w, q->level_idc, 8);
    sva_bw_ue(w, q->seq_parameter_set_id);
    if (profile_idc == 100) {
        sva_bw_ue(w, q->seq_fields.bits.chroma_format_idc);
        sva_bw_ue(w, q->bit_depth_luma_minus8);
        sva_bw_ue(w, q->bit_depth_chroma_minus8);
        sva_bw_put(w, 0, 1);                            /* qpprime_y_zero_transform_bypass_flag */
        sva_bw_put(w, 0, 1);                            /* seq_scaling_matrix_present_flag */
    }
    sva_bw_ue(w, q->seq_fields.bits.log2_max_frame_num_minus4);
    sva_bw_ue(w, q->seq_fields.bits.pic_order_cnt_type);
    if (q->seq_fields.bits.pic_order_cnt_type == 0) {
        sva_bw_ue(w, q->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4);
    } else if (q->seq_fields.bits.pic_order_cnt_type == 1) {
        sva_bw_put(w, q->seq_fields.bits.delta_pic_order_always_zero_flag, 1);
        sva_bw_se(w, q->offset_for_non_ref_pic);
        sva_bw_se(w, q->offset_for_top_to_bottom_field);
        sva_bw_ue(w, q->num_ref_frames_in_pic_order_cnt_cycle);
        for (int i = 0; i < q->num_ref_frames_in_pic_order_cnt_cycle; i++)
            sva_bw_se(w, q->offset_for_ref_frame[i]);
    }
    sva_bw_ue(w, q->max_num_ref_frames);
    sva_bw_put(w, 0, 1);                                /* gaps_in_frame_num_value_allowed_flag */
    sva_bw_ue(w, q->picture_width_in_mbs - 1u);
    sva_bw_ue(w, q->picture_height_in_mbs - 1u);        /* frame_mbs_only: map units are macroblocks */
    sva_bw_put(w, 1, 1);                                /* frame_mbs_only_flag */
    sva_bw_put(w, q->seq_fields.bits.direct_8x8_inference_flag, 1);
    sva_bw_put(w, q->frame_cropping_flag ? 1 : 0, 1);
    if (q->frame_cropping_flag) {
        sva_bw_ue(w, q->frame_crop_left_offset);
        sva_bw_ue(w, q->frame_crop_right_offset);
        sva_bw_ue(w, q->frame_crop_top_offset);
        sva_bw_ue(w, q->frame_crop_bottom_offset);
    }
    sva_bw_put(w, q->vui_parameters_present_flag ? 1 : 0, 1);
    if (q->vui_parameters_present_flag) {
        /* vui_parameters() (E.1.1): aspect ratio and timing; no HRD, no bitstream restriction
         * (the buffers do not say how many frames are reordered) */
        int aspect = q->vui_fields.bits.aspect_ratio_info_present_flag;
        sva_bw_put(w, (uint32_t)aspect, 1);
        if (aspect) {
            sva_bw_put(w, q->aspect_ratio_idc, 8);
            if (q->aspect_ratio_idc == 255) {
                sva_bw_put(w, q->sar_width, 16);
                sva_bw_put(w, q->sar_height, 16);
            }
        }
        sva_bw_put(w, 0, 1);                            /* overscan_info_present_flag */
        sva_bw_put(w, 0, 1);                            /* video_signal_type_present_flag */
        sva_bw_put(w, 0, 1);                            /* chroma_loc_info_present_flag */
        int timing = q->vui_fields.bits.timing_info_present_flag;
        sva_bw_put(w, (uint32_t)timing, 1);
        if (timing) {
            sva_bw_put(w, q->num_units_in_tick, 32);
            sva_bw_put(w, q->time_scale, 32);
            sva_bw_put(w, q->vui_fields.bits.fixed_frame_rate_flag, 1);
        }
        sva_bw_put(w, 0, 1);                            /* nal_hrd_parameters_present_flag */
        sva_bw_put(w, 0, 1);                            /* vcl_hrd_parameters_present_flag */
        sva_bw_put(w, 0, 1);                            /* pic_struct_present_flag */
        sva_bw_put(w, 0, 1);                            /* bitstream_restriction_flag */
    }
    sva_bw_trailing(w);
}

/* pic_parameter_set_rbsp() (7.3.2.2) from VAEncPictureParameterBufferH264. Scaling matrices are
 * not written: I_PCM samples are not quantised. */
static void write_pps(sva_bitwriter *w, const VAEncPictureParameterBufferH264 *pic)
{
    sva_bw_put(w, 0x68, 8);                             /* nal_ref_idc 3, nal_unit_type 8 */
    sva_bw_ue(w, pic->pic_parameter_set_id);
    sva_bw_ue(w, pic->seq_parameter_set_id);
    sva_bw_put(w, pic->pic_fields.bits.entropy_coding_mode_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.pic_order_present_flag, 1);
    sva_bw_ue(w, 0);                                    /* num_slice_groups_minus1 */
    sva_bw_ue(w, pic->num_ref_idx_l0_active_minus1);
    sva_bw_ue(w, pic->num_ref_idx_l1_active_minus1);
    sva_bw_put(w, pic->pic_fields.bits.weighted_pred_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.weighted_bipred_idc, 2);
    sva_bw_se(w, (int32_t)pic->pic_init_qp - 26);
    sva_bw_se(w, 0);                                    /* pic_init_qs_minus26 */
    sva_bw_se(w, pic->chroma_qp_index_offset);
    sva_bw_put(w, pic->pic_fields.bits.deblocking_filter_control_present_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.constrained_intra_pred_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.redundant_pic_cnt_present_flag, 1);
    if (pic->pic_fields.bits.transform_8x8_mode_flag ||
        pic->second_chroma_qp_index_offset != pic->chroma_qp_index_offset) {
        sva_bw_put(w, pic->pic_fields.bits.transform_8x8_mode_flag, 1);
        sva_bw_put(w, 0, 1);                            /* pic_scaling_matrix_present_flag */
        sva_bw_se(w, pic->second_chroma_qp_index_offset);
    }
    sva_bw_trailing(w);
}

/* nal_unit_header + slice_header() (7.3.3) from the slice and picture parameters. */
static VAStatus write_slice_header(sva_bitwriter *w, const VAEncSequenceParameterBufferH264 *q,
                                   const VAEncPictureParameterBufferH264 *pic,
                                   const VAEncSliceParameterBufferH264 *slice)
{
    const int type = slice->slice_type % 5;
    const int idr = pic->pic_fields.bits.idr_pic_flag;
    const int ref = pic->pic_fields.bits.reference_pic_flag != 0 || idr;
    if ((pic->pic_fields.bits.weighted_pred_flag && type == 0) ||
        (pic->pic_fields.bits.weighted_bipred_idc == 1 && type == 1))
        return VA_STATUS_ERROR_UNIMPLEMENTED;           /* explicit weights: send packed slice headers */
    sva_bw_put(w, 0, 1);                                /* forbidden_zero_bit */
    sva_bw_put(w, ref ? 3 : 0, 2);                      /* nal_ref_idc */
    sva_bw_put(w, idr ? 5 : 1, 5);                      /* nal_unit_type */
    sva_bw_ue(w, slice->macroblock_address);            /* first_mb_in_slice */
    sva_bw_ue(w, slice->slice_type);
    sva_bw_ue(w, slice->pic_parameter_set_id);
    sva_bw_put(w, pic->frame_num, q->seq_fields.bits.log2_max_frame_num_minus4 + 4);
    if (idr)
        sva_bw_ue(w, slice->idr_pic_id);
    if (q->seq_fields.bits.pic_order_cnt_type == 0) {
        sva_bw_put(w, slice->pic_order_cnt_lsb, q->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4);
        if (pic->pic_fields.bits.pic_order_present_flag)
            sva_bw_se(w, slice->delta_pic_order_cnt_bottom);
    } else if (q->seq_fields.bits.pic_order_cnt_type == 1 && !q->seq_fields.bits.delta_pic_order_always_zero_flag) {
        sva_bw_se(w, slice->delta_pic_order_cnt[0]);
        if (pic->pic_fields.bits.pic_order_present_flag)
            sva_bw_se(w, slice->delta_pic_order_cnt[1]);
    }
    if (pic->pic_fields.bits.redundant_pic_cnt_present_flag)
        sva_bw_ue(w, 0);                                /* redundant_pic_cnt */
    if (type == 1)
        sva_bw_put(w, slice->direct_spatial_mv_pred_flag, 1);
    if (type == 0 || type == 1 || type == 3) {
        sva_bw_put(w, slice->num_ref_idx_active_override_flag ? 1 : 0, 1);
        if (slice->num_ref_idx_active_override_flag) {
            sva_bw_ue(w, slice->num_ref_idx_l0_active_minus1);
            if (type == 1)
                sva_bw_ue(w, slice->num_ref_idx_l1_active_minus1);
        }
    }
    if (type != 2 && type != 4)
        sva_bw_put(w, 0, 1);                            /* ref_pic_list_modification_flag_l0 */
    if (type == 1)
        sva_bw_put(w, 0, 1);                            /* ref_pic_list_modification_flag_l1 */
    if (ref) {
        if (idr) {
            sva_bw_put(w, 0, 1);                        /* no_output_of_prior_pics_flag */
            sva_bw_put(w, 0, 1);                        /* long_term_reference_flag */
        } else {
            sva_bw_put(w, 0, 1);                        /* adaptive_ref_pic_marking_mode_flag */
        }
    }
    if (pic->pic_fields.bits.entropy_coding_mode_flag && type != 2 && type != 4)
        sva_bw_ue(w, slice->cabac_init_idc);
    sva_bw_se(w, slice->slice_qp_delta);
    if (pic->pic_fields.bits.deblocking_filter_control_present_flag) {
        sva_bw_ue(w, slice->disable_deblocking_filter_idc);
        if (slice->disable_deblocking_filter_idc != 1) {
            sva_bw_se(w, slice->slice_alpha_c0_offset_div2);
            sva_bw_se(w, slice->slice_beta_offset_div2);
        }
    }
    return VA_STATUS_SUCCESS;
}

/* Appends a whole NAL unit SoftVA wrote (its RBSP in w) to out. */
static VAStatus append_own_nal(sva_bitwriter *w, uint8_t **out, size_t *out_len, size_t *out_cap)
{
    VAStatus st = VA_STATUS_SUCCESS;
    if (w->failed || sva_h264_append_nal(out, out_len, out_cap, 4, w->data, w->bits / 8) < 0)
        st = VA_STATUS_ERROR_ALLOCATION_FAILED;
    sva_bw_free(w);
    return st;
}

/* Continues a packed slice header with the slice data and appends the NAL unit to out. */
static VAStatus write_slice(const uint8_t *header, size_t len, uint32_t bits,
                            const VAEncPictureParameterBufferH264 *pic, const VAEncSliceParameterBufferH264 *slice,
                            int width_mbs, const sva_plane planes[3],
                            uint8_t **out, size_t *out_len, size_t *out_cap)
{
    size_t zeros = 0;
    while (zeros < len && zeros < 3 && header[zeros] == 0) zeros++;
    size_t start_code = zeros >= 2 && zeros < len && header[zeros] == 1 ? zeros + 1 : 0;
    if (8 * start_code >= bits)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    uint8_t *rbsp = malloc(len);
    if (!rbsp)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    size_t removed = 0;
    size_t rbsp_len = sva_h264_unescape(header + start_code, len - start_code, rbsp, len - start_code, &removed);
    size_t rbsp_bits = bits - 8 * start_code - 8 * removed;
    if (rbsp_bits > 8 * rbsp_len) {
        free(rbsp);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    sva_bitwriter w = { 0 };
    sva_bw_bytes(&w, rbsp, rbsp_bits / 8);
    if (rbsp_bits % 8)
        sva_bw_put(&w, (uint32_t)(rbsp[rbsp_bits / 8] >> (8 - rbsp_bits % 8)), (int)(rbsp_bits % 8));
    free(rbsp);
    write_slice_data(&w, pic, slice, width_mbs, planes);
    VAStatus st = VA_STATUS_SUCCESS;
    if (w.failed || sva_h264_append_nal(out, out_len, out_cap, (int)(start_code ? start_code : 4),
                                        w.data, w.bits / 8) < 0)
        st = VA_STATUS_ERROR_ALLOCATION_FAILED;
    sva_bw_free(&w);
    return st;
}

static int append_bytes(uint8_t **out, size_t *len, size_t *cap, const uint8_t *src, size_t n)
{
    if (*len + n > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap < *len + n) ncap *= 2;
        uint8_t *p = realloc(*out, ncap);
        if (!p)
            return -1;
        *out = p;
        *cap = ncap;
    }
    memcpy(*out + *len, src, n);
    *len += n;
    return 0;
}

VAStatus sva_h264_encode_picture(sva_driver *drv, sva_context *ctx, sva_surface *source, uint64_t *coded_bytes)
{
    sva_h264_encoder *e = ctx->h264enc;
    *coded_bytes = 0;
    if (!e->have_picture)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    sva_buffer *coded = sva_table_get(&drv->buffers, e->picture.coded_buf);
    if (!coded || coded->type != VAEncCodedBufferType)
        return VA_STATUS_ERROR_INVALID_BUFFER;
    uint32_t fourcc = source->layout.fourcc;
    int hsub, vsub;
    sva_chroma_subsampling(fourcc, &hsub, &vsub);
    if (sva_format_is_rgb(fourcc) || sva_format_depth(fourcc) != 8 || hsub != 1 || vsub != 1)
        return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT;    /* 8-bit 4:2:0 sources only */
    int width_mbs = e->have_sequence && e->sequence.picture_width_in_mbs ? e->sequence.picture_width_in_mbs
                                                                         : (ctx->width + 15) / 16;
    int height_mbs = e->have_sequence && e->sequence.picture_height_in_mbs ? e->sequence.picture_height_in_mbs
                                                                           : (ctx->height + 15) / 16;
    if (width_mbs <= 0 || height_mbs <= 0)
        return VA_STATUS_ERROR_INVALID_PARAMETER;

    unsigned num_slice_headers = 0;
    int packed_sequence = 0;
    for (unsigned i = 0; i < e->num_units; i++) {
        num_slice_headers += (unsigned)e->units[i].is_slice;
        packed_sequence |= e->units[i].type == VAEncPackedHeaderSequence;
    }
    if (e->num_slices == 0 || (num_slice_headers && num_slice_headers != e->num_slices)) {
        fprintf(stderr, "softva: H.264 encode: %u slices but %u packed slice headers\n", e->num_slices, num_slice_headers);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    /* Without packed headers SoftVA writes them, from parameters it must then have. */
    const int own_slices = num_slice_headers == 0;
    const int own_sequence = e->picture.pic_fields.bits.idr_pic_flag && !packed_sequence &&
                             !(ctx->config.packed_headers & VA_ENC_PACKED_HEADER_SEQUENCE);
    if ((own_slices || own_sequence) && !e->have_sequence) {
        fprintf(stderr, "softva: H.264 encode: no packed headers and no sequence parameters to write them from\n");
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    for (unsigned i = 0; i < e->num_slices; i++) {
        const VAEncSliceParameterBufferH264 *s = &e->slices[i];
        if ((uint64_t)s->macroblock_address + s->num_macroblocks > (uint64_t)width_mbs * (uint64_t)height_mbs ||
            s->num_macroblocks == 0 || s->slice_type % 5 == 4)
            return VA_STATUS_ERROR_INVALID_PARAMETER;   /* outside the picture, empty, or SI */
    }

    sva_plane planes[4];
    sva_planes_of(&source->layout, source->data, planes);
    uint8_t *out = NULL;
    size_t out_len = 0, out_cap = 0;
    unsigned slice = 0;
    VAStatus st = VA_STATUS_SUCCESS;
    if (own_sequence) {
        sva_bitwriter w = { 0 };
        write_sps(&w, ctx->config.profile, &e->sequence);
        st = append_own_nal(&w, &out, &out_len, &out_cap);
        if (st == VA_STATUS_SUCCESS) {
            write_pps(&w, &e->picture);
            st = append_own_nal(&w, &out, &out_len, &out_cap);
        }
    }
    for (unsigned i = 0; i < e->num_units && st == VA_STATUS_SUCCESS; i++) {
        const packed_unit *u = &e->units[i];
        if (!u->is_slice) {
            if (append_bytes(&out, &out_len, &out_cap, e->headers + u->offset, u->len) < 0)
                st = VA_STATUS_ERROR_ALLOCATION_FAILED;
            continue;
        }
        st = write_slice(e->headers + u->offset, u->len, u->bits, &e->picture, &e->slices[slice++],
                         width_mbs, planes, &out, &out_len, &out_cap);
    }
    for (unsigned i = 0; own_slices && i < e->num_slices && st == VA_STATUS_SUCCESS; i++) {
        sva_bitwriter w = { 0 };
        st = write_slice_header(&w, &e->sequence, &e->picture, &e->slices[i]);
        if (st != VA_STATUS_SUCCESS) {
            sva_bw_free(&w);
            break;
        }
        write_slice_data(&w, &e->picture, &e->slices[i], width_mbs, planes);
        st = append_own_nal(&w, &out, &out_len, &out_cap);
    }
    if (st == VA_STATUS_SUCCESS) {
        size_t capacity = (size_t)coded->size * coded->num_elements;
        memset(&coded->segment, 0, sizeof(coded->segment));
        if (out_len > capacity) {
            coded->segment.status = VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK;
            st = VA_STATUS_ERROR_NOT_ENOUGH_BUFFER;
        } else {
            memcpy(coded->data, out, out_len);
            coded->segment.size = (uint32_t)out_len;
            coded->segment.buf = coded->data;
            *coded_bytes = out_len;
        }
    }
    free(out);
    if (st != VA_STATUS_SUCCESS)
        return st;

    /* The reconstructed picture is the source, bit for bit. */
    sva_surface *recon = sva_table_get(&drv->surfaces, e->picture.CurrPic.picture_id);
    if (recon && recon != source) {
        VARectangle sr = { 0, 0, (uint16_t)source->layout.width, (uint16_t)source->layout.height };
        VARectangle dr = { 0, 0, (uint16_t)recon->layout.width, (uint16_t)recon->layout.height };
        sva_colour colour = { 0, 0 };
        sva_convert(&source->layout, source->data, sr, colour, &recon->layout, recon->data, dr, colour);
    }
    return VA_STATUS_SUCCESS;
}
