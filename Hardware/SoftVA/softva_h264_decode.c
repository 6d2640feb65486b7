/*
 * SoftVA H.264 decode (VAEntrypointVLD, Constrained Baseline/Main/High, 4:2:0 8-bit; progressive,
 * field pictures (PAFF) and MBAFF).
 *
 * VA-API hands the driver parsed parameters plus the slice NAL units, not the parameter sets.
 * SoftVA rebuilds an SPS and a PPS from VAPictureParameterBufferH264 (profile from the config,
 * scaling lists from VAIQMatrixBufferH264, num_ref_idx defaults from the slices), feeds them and
 * the slices, in decode order, to a libavcodec h264 decoder owned by the context (one thread),
 * and copies each picture into the target surface as soon as it is decoded: the picture is the
 * frame libavcodec allocated through get_buffer2 while decoding this packet, not whatever
 * libavcodec outputs (which comes later, in display order). The reference frames the client
 * names are not used: libavcodec keeps its own decoded picture buffer, in step with the client's
 * because it sees the same pictures in the same order.
 *
 * Field pictures: the second field of a pair is decoded into the frame the first one allocated,
 * and the client renders both into the same surface, so after the second field the whole frame
 * is copied again.
 *
 * What the VA buffers cannot describe is refused at vaEndPicture with a message on stderr:
 * picture order count type 1 (its offsets are not in the buffers), bit depths other than 8 and
 * chroma formats other than 4:2:0 and 4:0:0. (Slice groups, FMO, never reach SoftVA: libavcodec
 * refuses them before calling the hwaccel.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>

#include "softva_h264_bits.h"
#include "softva_internal.h"

typedef struct sva_h264_slice {
    VASliceParameterBufferH264 param;
    size_t offset, size;        /* the NAL unit's bytes in the picture's data */
} sva_h264_slice;

struct sva_h264_decoder {
    /* per picture, reset at vaBeginPicture */
    int have_picture, have_iq;
    VAPictureParameterBufferH264 picture;
    VAIQMatrixBufferH264 iq;
    VASliceParameterBufferH264 *pending;   /* slice parameters waiting for their data buffer */
    unsigned num_pending, pending_cap;
    sva_h264_slice *slices;
    unsigned num_slices, slices_cap;
    uint8_t *data; size_t data_len, data_cap;

    /* per context */
    AVCodecContext *avc;
    AVPacket *packet;
    AVFrame *frame;
    uint8_t *stream; size_t stream_len, stream_cap;   /* the packet being built */
    uint8_t *sps; size_t sps_len;                     /* last SPS sent, escaped */
    uint8_t *pps; size_t pps_len;                     /* last PPS sent, escaped */
    /* The frame libavcodec allocated last, kept until the next allocation: the second field of
     * a field pair is decoded into the frame the first field allocated. */
    AVBufferRef *captured[AV_NUM_DATA_POINTERS];
    uint8_t *cap_data[3];
    int cap_linesize[3];
    int cap_width, cap_height, cap_format;
    uint64_t allocations;       /* frames allocated so far */
    VASurfaceID cap_target;     /* the surface the kept frame was last copied into */
};

/* zigzag position -> raster index (x + 4y / x + 8y), ITU-T H.264 8.5.6 (frame macroblocks) */
static const uint8_t zigzag4x4[16] = { 0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15 };
static const uint8_t zigzag8x8[64] = {
     0,  1,  8, 16,  9,  2,  3, 10, 17, 24, 32, 25, 18, 11,  4,  5,
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13,  6,  7, 14, 21, 28,
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
};

int sva_profile_is_h264(VAProfile p)
{
    return p == VAProfileH264ConstrainedBaseline || p == VAProfileH264Main || p == VAProfileH264High;
}

/* ---- libavcodec ------------------------------------------------------------------------- */

static void release_capture(sva_h264_decoder *d)
{
    for (int i = 0; i < AV_NUM_DATA_POINTERS; i++)
        av_buffer_unref(&d->captured[i]);
    memset(d->cap_data, 0, sizeof(d->cap_data));
}

/* get_buffer2: allocates as libavcodec would and remembers the frame, whose planes become the
 * picture copied into the target surface once the packet is decoded. With one thread, the last
 * frame allocated while decoding a packet is that packet's picture (frames allocated for gaps
 * in frame_num come before it). */
static int capture_get_buffer(AVCodecContext *avc, AVFrame *frame, int flags)
{
    sva_h264_decoder *d = avc->opaque;
    int ret = avcodec_default_get_buffer2(avc, frame, flags);
    if (ret < 0)
        return ret;
    release_capture(d);
    for (int i = 0; i < AV_NUM_DATA_POINTERS && frame->buf[i]; i++) {
        d->captured[i] = av_buffer_ref(frame->buf[i]);
        if (!d->captured[i]) {
            release_capture(d);
            return AVERROR(ENOMEM);
        }
    }
    for (int i = 0; i < 3; i++) {
        d->cap_data[i] = frame->data[i];
        d->cap_linesize[i] = frame->linesize[i];
    }
    d->cap_width = frame->width;
    d->cap_height = frame->height;
    d->cap_format = frame->format;
    d->cap_target = VA_INVALID_SURFACE;
    d->allocations++;
    return 0;
}

static VAStatus open_decoder(sva_h264_decoder *d)
{
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_H264);
    if (!codec)
        return VA_STATUS_ERROR_OPERATION_FAILED;
    d->avc = avcodec_alloc_context3(codec);
    d->packet = av_packet_alloc();
    d->frame = av_frame_alloc();
    if (!d->avc || !d->packet || !d->frame)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    d->avc->opaque = d;
    d->avc->get_buffer2 = capture_get_buffer;
    d->avc->thread_count = 1; /* decode order, one picture at a time */
    if (avcodec_open2(d->avc, codec, NULL) < 0)
        return VA_STATUS_ERROR_OPERATION_FAILED;
    return VA_STATUS_SUCCESS;
}

/* ---- Context lifetime ------------------------------------------------------------------- */

VAStatus sva_h264_decoder_create(sva_context *ctx)
{
    sva_h264_decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    ctx->h264dec = d;
    VAStatus st = open_decoder(d);
    if (st != VA_STATUS_SUCCESS) {
        sva_h264_decoder_destroy(ctx);
        return st;
    }
    return VA_STATUS_SUCCESS;
}

void sva_h264_decoder_destroy(sva_context *ctx)
{
    sva_h264_decoder *d = ctx->h264dec;
    if (!d)
        return;
    release_capture(d);
    avcodec_free_context(&d->avc);
    av_packet_free(&d->packet);
    av_frame_free(&d->frame);
    free(d->pending);
    free(d->slices);
    free(d->data);
    free(d->stream);
    free(d->sps);
    free(d->pps);
    free(d);
    ctx->h264dec = NULL;
}

void sva_h264_decode_begin(sva_context *ctx)
{
    sva_h264_decoder *d = ctx->h264dec;
    d->have_picture = d->have_iq = 0;
    d->num_pending = d->num_slices = 0;
    d->data_len = 0;
}

/* ---- Buffers ---------------------------------------------------------------------------- */

static int append(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *src, size_t n)
{
    if (*len + n > *cap) {
        size_t ncap = *cap ? *cap : 4096;
        while (ncap < *len + n) ncap *= 2;
        uint8_t *nb = realloc(*buf, ncap);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = ncap;
    }
    memcpy(*buf + *len, src, n);
    *len += n;
    return 0;
}

VAStatus sva_h264_decode_render(sva_context *ctx, sva_buffer *b)
{
    sva_h264_decoder *d = ctx->h264dec;
    size_t total = (size_t)b->size * b->num_elements;
    switch (b->type) {
    case VAPictureParameterBufferType:
        if (b->size < sizeof(VAPictureParameterBufferH264))
            return VA_STATUS_ERROR_INVALID_BUFFER;
        memcpy(&d->picture, b->data, sizeof(d->picture));
        d->have_picture = 1;
        return VA_STATUS_SUCCESS;
    case VAIQMatrixBufferType:
        if (b->size < offsetof(VAIQMatrixBufferH264, va_reserved))
            return VA_STATUS_ERROR_INVALID_BUFFER;
        memcpy(&d->iq, b->data, offsetof(VAIQMatrixBufferH264, va_reserved));
        d->have_iq = 1;
        return VA_STATUS_SUCCESS;
    case VASliceParameterBufferType:
        if (b->size < sizeof(VASliceParameterBufferH264))
            return VA_STATUS_ERROR_INVALID_BUFFER;
        if (sva_grow((void **)&d->pending, &d->pending_cap, d->num_pending + b->num_elements, sizeof(*d->pending)) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        for (unsigned i = 0; i < b->num_elements; i++)
            memcpy(&d->pending[d->num_pending++], b->data + (size_t)i * b->size, sizeof(*d->pending));
        return VA_STATUS_SUCCESS;
    case VASliceDataBufferType:
        /* the slice parameters rendered since the last data buffer describe this one */
        if (!d->num_pending)
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        if (sva_grow((void **)&d->slices, &d->slices_cap, d->num_slices + d->num_pending, sizeof(*d->slices)) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        for (unsigned i = 0; i < d->num_pending; i++) {
            const VASliceParameterBufferH264 *p = &d->pending[i];
            if ((size_t)p->slice_data_offset + p->slice_data_size > total || p->slice_data_size == 0)
                return VA_STATUS_ERROR_INVALID_PARAMETER;
            if (p->slice_data_flag != VA_SLICE_DATA_FLAG_ALL)
                return VA_STATUS_ERROR_UNIMPLEMENTED; /* slices split over several buffers */
            sva_h264_slice *s = &d->slices[d->num_slices++];
            s->param = *p;
            s->offset = d->data_len;
            s->size = p->slice_data_size;
            if (append(&d->data, &d->data_len, &d->data_cap, b->data + p->slice_data_offset, p->slice_data_size) < 0)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        d->num_pending = 0;
        return VA_STATUS_SUCCESS;
    default:
        return VA_STATUS_ERROR_UNSUPPORTED_BUFFERTYPE;
    }
}

/* ---- Parameter sets --------------------------------------------------------------------- */

/* What SoftVA reads from each slice header: enough to place the PPS and its defaults. */
typedef struct slice_header {
    uint32_t pps_id;
    int slice_type;             /* 0 P, 1 B, 2 I, 3 SP, 4 SI */
    int override_flag;          /* num_ref_idx_active_override_flag (0 when absent) */
} slice_header;

/* Skips a start code the client may have left in front of the NAL unit. */
static const uint8_t *nal_start(const uint8_t *p, size_t *n)
{
    size_t i = 0;
    while (i < *n && i < 3 && p[i] == 0) i++;
    if (i >= 2 && i < *n && p[i] == 1) {
        *n -= i + 1;
        return p + i + 1;
    }
    return p;
}

/* Parses the start of a slice header (7.3.3) up to num_ref_idx_active_override_flag. */
static int parse_slice_header(const VAPictureParameterBufferH264 *pic, const uint8_t *nal, size_t n,
                              slice_header *out)
{
    uint8_t head[64];
    size_t take = n < sizeof(head) ? n : sizeof(head);
    size_t len = sva_h264_unescape(nal, take, head, take, NULL);
    if (len < 2)
        return -1;
    int nal_type = head[0] & 0x1f;
    if (nal_type != 1 && nal_type != 5)
        return -1;
    sva_bitreader r = { head + 1, (len - 1) * 8, 0, 0 };
    sva_br_ue(&r);                                      /* first_mb_in_slice */
    out->slice_type = (int)(sva_br_ue(&r) % 5);
    out->pps_id = sva_br_ue(&r);
    sva_br_u(&r, pic->seq_fields.bits.log2_max_frame_num_minus4 + 4); /* frame_num */
    uint32_t field_pic = 0;
    if (!pic->seq_fields.bits.frame_mbs_only_flag && (field_pic = sva_br_u(&r, 1)))
        sva_br_u(&r, 1);                                /* bottom_field_flag */
    if (nal_type == 5)
        sva_br_ue(&r);                                  /* idr_pic_id */
    if (pic->seq_fields.bits.pic_order_cnt_type == 0) {
        sva_br_u(&r, pic->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4);
        if (pic->pic_fields.bits.pic_order_present_flag && !field_pic)
            sva_br_se(&r);                              /* delta_pic_order_cnt_bottom */
    }
    if (pic->pic_fields.bits.redundant_pic_cnt_present_flag)
        sva_br_ue(&r);
    if (out->slice_type == 1)
        sva_br_u(&r, 1);                                /* direct_spatial_mv_pred_flag */
    out->override_flag = 0;
    if (out->slice_type == 0 || out->slice_type == 1 || out->slice_type == 3)
        out->override_flag = (int)sva_br_u(&r, 1);
    return r.overrun || out->pps_id > 255 ? -1 : 0;
}

static void write_scaling_list(sva_bitwriter *w, const uint8_t *list, const uint8_t *zigzag, int size)
{
    int last = 8;
    for (int j = 0; j < size; j++) {
        int value = list[zigzag[j]];
        int delta = value - last;
        if (delta > 127) delta -= 256;
        if (delta < -128) delta += 256;
        sva_bw_se(w, delta);
        last = value;
    }
}

static int flat(const uint8_t *list, int size)
{
    for (int i = 0; i < size; i++)
        if (list[i] != 16) return 0;
    return 1;
}

/* Builds the SPS (7.3.2.1.1). Every field comes from the picture parameters except the
 * profile (the config's), the level (any, since SoftVA does not enforce one) and the VUI
 * (absent: it only affects output timing and order, which SoftVA does not use). */
static void build_sps(sva_bitwriter *w, VAProfile profile, const VAPictureParameterBufferH264 *pic, int high)
{
    int profile_idc = high ? 100 : profile == VAProfileH264Main ? 77 : 66;
    sva_bw_put(w, 0x67, 8);                             /* nal_ref_idc 3, nal_unit_type 7 */
    sva_bw_put(w, (uint32_t)profile_idc, 8);
    /* constraint_set1_flag for Constrained Baseline (66) and Main (77) streams */
    sva_bw_put(w, profile_idc == 100 ? 0 : 0x40, 8);
    sva_bw_put(w, pic->seq_fields.bits.MinLumaBiPredSize8x8 ? 41 : 30, 8);
    sva_bw_ue(w, 0);                                    /* seq_parameter_set_id */
    if (profile_idc == 100) {
        sva_bw_ue(w, pic->seq_fields.bits.chroma_format_idc);
        sva_bw_ue(w, pic->bit_depth_luma_minus8);
        sva_bw_ue(w, pic->bit_depth_chroma_minus8);
        sva_bw_put(w, 0, 1);                            /* qpprime_y_zero_transform_bypass_flag */
        sva_bw_put(w, 0, 1);                            /* seq_scaling_matrix_present_flag: lists go in the PPS */
    }
    sva_bw_ue(w, pic->seq_fields.bits.log2_max_frame_num_minus4);
    sva_bw_ue(w, pic->seq_fields.bits.pic_order_cnt_type);
    if (pic->seq_fields.bits.pic_order_cnt_type == 0)
        sva_bw_ue(w, pic->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4);
    sva_bw_ue(w, pic->num_ref_frames);
    sva_bw_put(w, pic->seq_fields.bits.gaps_in_frame_num_value_allowed_flag, 1);
    sva_bw_ue(w, pic->picture_width_in_mbs_minus1);
    /* map units are macroblock pairs unless frame_mbs_only_flag (VA gives the frame's height) */
    int frame_mbs_only = pic->seq_fields.bits.frame_mbs_only_flag;
    int height_mbs = pic->picture_height_in_mbs_minus1 + 1;
    sva_bw_ue(w, (uint32_t)(frame_mbs_only ? height_mbs : (height_mbs + 1) / 2) - 1);
    sva_bw_put(w, (uint32_t)frame_mbs_only, 1);
    if (!frame_mbs_only)
        sva_bw_put(w, pic->seq_fields.bits.mb_adaptive_frame_field_flag, 1);
    sva_bw_put(w, pic->seq_fields.bits.direct_8x8_inference_flag, 1);
    sva_bw_put(w, 0, 1);                                /* frame_cropping_flag: the client crops */
    sva_bw_put(w, 0, 1);                                /* vui_parameters_present_flag */
    sva_bw_trailing(w);
}

/* Builds the PPS (7.3.2.2). Scaling lists, when not flat, are written explicitly: the lists
 * VA-API sends are the ones in force, after the fall-back rules, so no inference is needed. */
static void build_pps(sva_bitwriter *w, const VAPictureParameterBufferH264 *pic, const VAIQMatrixBufferH264 *iq,
                      uint32_t pps_id, int l0_default, int l1_default)
{
    const int t8 = pic->pic_fields.bits.transform_8x8_mode_flag;
    int scaling = 0;
    if (iq) {
        for (int i = 0; i < 6; i++) if (!flat(iq->ScalingList4x4[i], 16)) scaling = 1;
        if (t8) for (int i = 0; i < 2; i++) if (!flat(iq->ScalingList8x8[i], 64)) scaling = 1;
    }
    sva_bw_put(w, 0x68, 8);                             /* nal_ref_idc 3, nal_unit_type 8 */
    sva_bw_ue(w, pps_id);
    sva_bw_ue(w, 0);                                    /* seq_parameter_set_id */
    sva_bw_put(w, pic->pic_fields.bits.entropy_coding_mode_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.pic_order_present_flag, 1);
    sva_bw_ue(w, 0);                                    /* num_slice_groups_minus1 */
    sva_bw_ue(w, (uint32_t)l0_default);
    sva_bw_ue(w, (uint32_t)l1_default);
    sva_bw_put(w, pic->pic_fields.bits.weighted_pred_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.weighted_bipred_idc, 2);
    sva_bw_se(w, pic->pic_init_qp_minus26);
    sva_bw_se(w, pic->pic_init_qs_minus26);
    sva_bw_se(w, pic->chroma_qp_index_offset);
    sva_bw_put(w, pic->pic_fields.bits.deblocking_filter_control_present_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.constrained_intra_pred_flag, 1);
    sva_bw_put(w, pic->pic_fields.bits.redundant_pic_cnt_present_flag, 1);
    if (t8 || scaling || pic->second_chroma_qp_index_offset != pic->chroma_qp_index_offset) {
        sva_bw_put(w, (uint32_t)t8, 1);
        sva_bw_put(w, (uint32_t)scaling, 1);            /* pic_scaling_matrix_present_flag */
        if (scaling) {
            for (int i = 0; i < 6 + 2 * t8; i++) {
                sva_bw_put(w, 1, 1);                    /* pic_scaling_list_present_flag[i] */
                if (i < 6)
                    write_scaling_list(w, iq->ScalingList4x4[i], zigzag4x4, 16);
                else
                    write_scaling_list(w, iq->ScalingList8x8[i - 6], zigzag8x8, 64);
            }
        }
        sva_bw_se(w, pic->second_chroma_qp_index_offset);
    }
    sva_bw_trailing(w);
}

/* True when the PPS needs the High profile's syntax (8x8 transform, scaling lists, a second
 * chroma QP offset). */
static int needs_high(VAProfile profile, const VAPictureParameterBufferH264 *pic, const VAIQMatrixBufferH264 *iq)
{
    if (profile == VAProfileH264High || pic->pic_fields.bits.transform_8x8_mode_flag ||
        pic->second_chroma_qp_index_offset != pic->chroma_qp_index_offset ||
        pic->seq_fields.bits.chroma_format_idc != 1)
        return 1;
    if (iq)
        for (int i = 0; i < 6; i++) if (!flat(iq->ScalingList4x4[i], 16)) return 1;
    return 0;
}

/* ---- Decoding --------------------------------------------------------------------------- */

/* Returns VA_STATUS_SUCCESS, or the status for a stream SoftVA cannot rebuild (with a message). */
static VAStatus check_rebuildable(const VAPictureParameterBufferH264 *pic)
{
    const char *why = NULL;
    VAStatus st = VA_STATUS_ERROR_UNIMPLEMENTED;
    if (pic->seq_fields.bits.pic_order_cnt_type == 1)
        why = "picture order count type 1 (its offsets are not in VAPictureParameterBufferH264)";
    else if (pic->bit_depth_luma_minus8 || pic->bit_depth_chroma_minus8) {
        why = "bit depths other than 8";
        st = VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    } else if (pic->seq_fields.bits.chroma_format_idc > 1) {
        why = "chroma formats other than 4:2:0 and 4:0:0";
        st = VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
    }
    if (!why)
        return VA_STATUS_SUCCESS;
    fprintf(stderr, "softva: H.264 decode: %s is not supported (%s)\n", why, sva_status_name(st));
    return st;
}

/* Copies one component of the decoded picture into the surface (the smaller of the two sizes). */
static void copy_component(const uint8_t *src, int src_stride, int w, int h, const sva_plane *dst)
{
    int cw = w < dst->width ? w : dst->width;
    int ch = h < dst->height ? h : dst->height;
    for (int y = 0; y < ch; y++) {
        const uint8_t *s = src + (size_t)y * (size_t)src_stride;
        uint8_t *d = dst->base + (size_t)y * (size_t)dst->stride;
        if (dst->step == 1) {
            memcpy(d, s, (size_t)cw);
        } else {
            for (int x = 0; x < cw; x++)
                d[(size_t)x * (size_t)dst->step] = s[x];
        }
    }
}

static VAStatus store_picture(sva_h264_decoder *d, sva_surface *target)
{
    if (sva_format_depth(target->layout.fourcc) != 8 || sva_format_is_rgb(target->layout.fourcc))
        return VA_STATUS_ERROR_INVALID_SURFACE;
    sva_plane planes[4];
    sva_planes_of(&target->layout, target->data, planes);
    copy_component(d->cap_data[0], d->cap_linesize[0], d->cap_width, d->cap_height, &planes[0]);
    int cw = (d->cap_width + 1) / 2, ch = (d->cap_height + 1) / 2;
    for (int c = 1; c < 3; c++) {
        if (!planes[c].present)
            continue;
        if (d->cap_data[c] && d->cap_format != AV_PIX_FMT_GRAY8)
            copy_component(d->cap_data[c], d->cap_linesize[c], cw, ch, &planes[c]);
        else
            sva_plane_fill(&planes[c], 128.0f); /* 4:0:0: neutral chroma */
    }
    return VA_STATUS_SUCCESS;
}

/* Appends the parameter set in w unless it equals the last one sent (kept in *last). Returns 1
 * when it was appended, 0 when not, -1 on allocation failure. */
static int append_if_changed(sva_h264_decoder *d, const sva_bitwriter *w, uint8_t **last, size_t *last_len)
{
    if (w->failed)
        return -1;
    size_t start = d->stream_len;
    if (sva_h264_append_nal(&d->stream, &d->stream_len, &d->stream_cap, 4, w->data, w->bits / 8) < 0)
        return -1;
    size_t n = d->stream_len - start;
    if (*last && *last_len == n && memcmp(*last, d->stream + start, n) == 0) {
        d->stream_len = start;
        return 0;
    }
    uint8_t *c = realloc(*last, n);
    if (!c)
        return -1;
    memcpy(c, d->stream + start, n);
    *last = c;
    *last_len = n;
    return 1;
}

VAStatus sva_h264_decode_picture(sva_driver *drv, sva_context *ctx, sva_surface *target)
{
    (void)drv;
    sva_h264_decoder *d = ctx->h264dec;
    if (!d->have_picture || d->num_slices == 0)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    const VAPictureParameterBufferH264 *pic = &d->picture;
    VAStatus st = check_rebuildable(pic);
    if (st != VA_STATUS_SUCCESS)
        return st;

    /* The PPS id comes from the slice headers; the num_ref_idx defaults from the first slices
     * that do not override them (those that do, carry their own values): L0 from a P or B
     * slice, L1 from a B slice. */
    slice_header first = { 0 };
    int l0 = d->slices[0].param.num_ref_idx_l0_active_minus1;
    int l1 = d->slices[0].param.num_ref_idx_l1_active_minus1;
    int l0_found = 0, l1_found = 0;
    for (unsigned i = 0; i < d->num_slices; i++) {
        size_t n = d->slices[i].size;
        const uint8_t *nal = nal_start(d->data + d->slices[i].offset, &n);
        slice_header h;
        if (parse_slice_header(pic, nal, n, &h) < 0) {
            fprintf(stderr, "softva: H.264 decode: slice %u is not a slice NAL unit SoftVA can read\n", i);
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        }
        if (i == 0)
            first = h;
        else if (h.pps_id != first.pps_id)
            return VA_STATUS_ERROR_INVALID_PARAMETER; /* 7.4.3: one PPS per picture */
        if (h.override_flag || h.slice_type == 2 || h.slice_type == 4)
            continue;
        if (!l0_found) {
            l0 = d->slices[i].param.num_ref_idx_l0_active_minus1;
            l0_found = 1;
        }
        if (!l1_found && h.slice_type == 1) {
            l1 = d->slices[i].param.num_ref_idx_l1_active_minus1;
            l1_found = 1;
        }
    }

    const VAIQMatrixBufferH264 *iq = d->have_iq ? &d->iq : NULL;
    int high = needs_high(ctx->config.profile, pic, iq);
    sva_bitwriter sps = { 0 }, pps = { 0 };
    build_sps(&sps, ctx->config.profile, pic, high);
    build_pps(&pps, pic, iq, first.pps_id, l0, l1);

    d->stream_len = 0;
    int sps_sent = append_if_changed(d, &sps, &d->sps, &d->sps_len);
    if (sps_sent > 0) {
        /* a new SPS invalidates the PPSs that refer to it in libavcodec: send the PPS again */
        free(d->pps);
        d->pps = NULL;
        d->pps_len = 0;
    }
    int pps_sent = sps_sent < 0 ? -1 : append_if_changed(d, &pps, &d->pps, &d->pps_len);
    sva_bw_free(&sps);
    sva_bw_free(&pps);
    if (pps_sent < 0)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    static const uint8_t start_code[4] = { 0, 0, 0, 1 };
    for (unsigned i = 0; i < d->num_slices; i++) {
        size_t n = d->slices[i].size;
        const uint8_t *nal = nal_start(d->data + d->slices[i].offset, &n);
        if (append(&d->stream, &d->stream_len, &d->stream_cap, start_code, 4) < 0 ||
            append(&d->stream, &d->stream_len, &d->stream_cap, nal, n) < 0)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }

    uint64_t allocations = d->allocations;
    d->packet->data = d->stream;
    d->packet->size = (int)d->stream_len;
    int ret = avcodec_send_packet(d->avc, d->packet);
    d->packet->data = NULL;
    d->packet->size = 0;
    /* libavcodec's own output (display order) is not used: drain and drop it */
    while (avcodec_receive_frame(d->avc, d->frame) == 0)
        av_frame_unref(d->frame);
    if (ret < 0) {
        char err[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(ret, err, sizeof(err));
        fprintf(stderr, "softva: H.264 decode: libavcodec refused the rebuilt picture: %s\n", err);
        return VA_STATUS_ERROR_DECODING_ERROR;
    }
    /* A new frame, or the second field of the frame last copied into this same surface. */
    int second_field = d->allocations == allocations && pic->pic_fields.bits.field_pic_flag &&
                       d->cap_data[0] && d->cap_target == target->id;
    if (d->allocations == allocations && !second_field) {
        fprintf(stderr, "softva: H.264 decode: libavcodec decoded no picture from the rebuilt stream\n");
        return VA_STATUS_ERROR_DECODING_ERROR;
    }
    st = store_picture(d, target);
    if (st == VA_STATUS_SUCCESS)
        d->cap_target = target->id;
    return st;
}
