/*
 * SoftVA: a VA-API driver that runs on the CPU, for tests on machines without a GPU.
 * Internal declarations shared by the driver's C files. Everything here is hidden:
 * the only exported symbol of the shared object is the libva init entry point.
 */
#ifndef SOFTVA_INTERNAL_H
#define SOFTVA_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <va/va.h>
#include <va/va_backend.h>
#include <va/va_backend_vpp.h>
#include <va/va_dec_jpeg.h>
#include <va/va_enc_h264.h>
#include <va/va_enc_jpeg.h>
#include <va/va_vpp.h>

#pragma GCC visibility push(hidden)

/* ---- Pixel formats and memory layout ---------------------------------------------------- */

typedef struct sva_layout {
    uint32_t fourcc;
    int width, height;
    int num_planes;
    uint32_t pitches[3];
    uint32_t offsets[3];
    uint32_t data_size;
} sva_layout;

/* One colour component of an image, as a strided array of samples. */
typedef struct sva_plane {
    uint8_t *base;   /* first sample of row 0 */
    int stride;      /* bytes between rows */
    int step;        /* bytes between samples in a row */
    int bytes;       /* 1 or 2 bytes per sample (2: little-endian, value in the top bits) */
    int shift;       /* right shift applied to a 2-byte sample (P010: 6) */
    int width, height;
    int present;     /* 0: component absent (Y800 chroma, RGB alpha of X formats) */
} sva_plane;

int sva_format_is_supported(uint32_t fourcc);
int sva_format_is_rgb(uint32_t fourcc);
int sva_format_depth(uint32_t fourcc);           /* 8 or 10 */
uint32_t sva_rt_format_for_fourcc(uint32_t fourcc);
uint32_t sva_default_fourcc_for_rt(uint32_t rt_format);
int sva_layout_make(uint32_t fourcc, int width, int height, sva_layout *out);
/* Components: YUV formats give Y,U,V in planes[0..2]; RGB formats give R,G,B,A. */
void sva_planes_of(const sva_layout *layout, uint8_t *data, sva_plane planes[4]);
void sva_chroma_subsampling(uint32_t fourcc, int *hsub, int *vsub); /* log2 */
VAImageFormat sva_image_format(uint32_t fourcc);
/* Scales the whole of src onto the whole of dst (a plain copy when the sizes match). */
int sva_plane_scale(const sva_plane *src, const sva_plane *dst);
/* Bob deinterlacing of the first `rows` luma rows of a picture (and the chroma rows they
 * cover): in each plane the rows of the kept field (bottom: the odd rows) are copied, the other
 * field's rows are the rounded mean of the kept rows above and below (the one neighbour at an
 * edge). dst has src's layout; rows past `rows` are copied as they are. */
void sva_bob(const sva_layout *layout, const uint8_t *src, uint8_t *dst, int rows, int bottom);
/* Fills a component with a constant (8-bit scale). */
void sva_plane_fill(const sva_plane *dst, float value);
extern const uint32_t sva_image_fourccs[];
extern const int sva_num_image_fourccs;

/* Colour handling for conversions between YUV and RGB. */
typedef struct sva_colour {
    int bt709;       /* 1: BT.709 matrix, 0: BT.601 */
    int full_range;  /* 1: full range YUV */
} sva_colour;
/* RGB (0..255) to Y, Cb, Cr samples on the 8-bit scale, honouring range and matrix. */
void sva_rgb_to_yuv(sva_colour c, float r, float g, float b, float *y, float *u, float *v);


/* Converts and scales src_rect of src into dst_rect of dst (both in pixels of the luma/RGB grid).
 * Scaling is separable, with a triangle (tent) kernel whose radius is the scale factor when
 * shrinking and one sample when enlarging (libswscale's "bilinear"). Returns VA_STATUS_SUCCESS
 * or VA_STATUS_ERROR_INVALID_PARAMETER / VA_STATUS_ERROR_INVALID_IMAGE_FORMAT. */
VAStatus sva_convert(const sva_layout *src_layout, uint8_t *src, VARectangle src_rect,
                     sva_colour src_colour,
                     const sva_layout *dst_layout, uint8_t *dst, VARectangle dst_rect,
                     sva_colour dst_colour);

/* How a layer's samples combine with the target's (see sva_compose). */
enum { SVA_SOURCE_ALPHA_IGNORED = 0, SVA_SOURCE_ALPHA_STRAIGHT = 1, SVA_SOURCE_ALPHA_PREMULTIPLIED = 2 };
typedef struct sva_blend {
    int replace;          /* 1: the layer's samples replace the target's (alpha copied where both have it) */
    float global_alpha;   /* 0..1: the layer's opacity, when not replacing */
    int source_alpha;     /* SVA_SOURCE_ALPHA_*: how an RGB source's alpha channel weighs each pixel */
} sva_blend;

/* Draws src_rect of src into dst_rect of dst, which may reach past dst's edges (the part outside is
 * clipped, not squeezed in): the source is rotated clockwise by `rotation` (VA_ROTATION_*), then
 * mirrored (VA_MIRROR_* bits, in the rotated picture's axes), then scaled into dst_rect with
 * sva_convert's tent filter, converted to dst's colour space and blended there:
 * out = a * layer + (1 - a) * target, per component. YUV to YUV works per plane at the target
 * plane's resolution; anything involving RGB works at full resolution, and a subsampled target's
 * chroma sample gets the average of its pixels' a * layer and of their a. A target sample only
 * partly covered by dst_rect has a scaled by the covered share. */
VAStatus sva_compose(const sva_layout *src_layout, uint8_t *src, VARectangle src_rect, sva_colour src_colour,
                     const sva_layout *dst_layout, uint8_t *dst, VARectangle dst_rect, sva_colour dst_colour,
                     uint32_t rotation, uint32_t mirror, sva_blend blend);

/* ---- Objects ---------------------------------------------------------------------------- */

typedef struct sva_table {
    void **items;
    uint32_t cap;
    uint32_t base;
    uint32_t hint;
} sva_table;

uint32_t sva_table_add(sva_table *t, void *item); /* returns VA_INVALID_ID when full/out of memory */
void *sva_table_get(sva_table *t, uint32_t id);
void *sva_table_take(sva_table *t, uint32_t id);

typedef struct sva_surface {
    VASurfaceID id;
    uint32_t rt_format;
    sva_layout layout;
    uint8_t *data;
    VAStatus last_error;  /* error of the last operation that rendered into it */
} sva_surface;

typedef struct sva_buffer {
    VABufferID id;
    VABufferType type;
    unsigned int size;          /* per element */
    unsigned int num_elements;
    uint8_t *data;              /* owned storage (NULL for a derived image buffer) */
    VASurfaceID derived_surface; /* VA_INVALID_ID unless this is a derived image's buffer */
    int map_count;
    VACodedBufferSegment segment; /* VAEncCodedBufferType only */
} sva_buffer;

typedef struct sva_image {
    VAImage image;
    VASurfaceID derived_from;   /* VA_INVALID_ID unless derived */
} sva_image;

typedef struct sva_config {
    VAConfigID id;
    VAProfile profile;
    VAEntrypoint entrypoint;
    uint32_t rt_format;
    uint32_t packed_headers;
    int executable;             /* SoftVA implements this profile/entrypoint */
} sva_config;

enum { SVA_OP_DECODE = 1, SVA_OP_ENCODE = 2, SVA_OP_VPP = 4 };

/* The SVA_OP_* kind of work a configuration's entrypoint does. */
static inline unsigned sva_config_op(const sva_config *c)
{
    switch (c->entrypoint) {
    case VAEntrypointVLD: return SVA_OP_DECODE;
    case VAEntrypointEncPicture: case VAEntrypointEncSlice: case VAEntrypointEncSliceLP: return SVA_OP_ENCODE;
    default: return SVA_OP_VPP;
    }
}

/* The index of an SVA_OP_* kind in per-kind counters: 0 decode, 1 encode, 2 vpp. */
static inline int sva_op_index(unsigned op)
{
    return op == SVA_OP_DECODE ? 0 : op == SVA_OP_ENCODE ? 1 : 2;
}

typedef struct sva_jpeg_decode {
    int have_picture, have_iq, have_huffman, num_slices;
    VAPictureParameterBufferJPEGBaseline picture;
    VAIQMatrixBufferJPEGBaseline iq;
    VAHuffmanTableBufferJPEGBaseline huffman;
    VASliceParameterBufferJPEGBaseline slice; /* first slice's parameters */
    VABufferID pending_slices;  /* slice parameters waiting for their slice data buffer */
    uint8_t *data; size_t data_len, data_cap;  /* slice data of all slices, in order */
} sva_jpeg_decode;

typedef struct sva_jpeg_encode {
    int have_picture, have_qmatrix, have_huffman, have_slice;
    VAEncPictureParameterBufferJPEG picture;
    VAQMatrixBufferJPEG qmatrix;
    VAHuffmanTableBufferJPEGBaseline huffman;
    VAEncSliceParameterBufferJPEG slice;
    int packed_pending;          /* a VAEncPackedHeaderParameterBuffer waits for its data */
    uint32_t packed_bits;
    uint8_t *header; size_t header_len, header_cap; /* raw packed header bytes, in order */
} sva_jpeg_encode;

/* One VAProcPipelineParameterBuffer rendered into a picture: a layer, drawn at vaEndPicture in
 * the order rendered. The client's pointers are cleared; what they pointed at is copied. */
typedef struct sva_vpp_layer {
    VAProcPipelineParameterBuffer params;
    VARectangle surface_region, output_region;
    int has_surface_region, has_output_region;
    int has_blend_state;
    VABlendState blend_state;
    /* a VAProcFilterParameterBufferDeinterlacing (bob) came with the layer: its flags, copied
     * at vaRenderPicture (the client maps and rewrites the buffer between pictures) */
    int deinterlace;
    unsigned deinterlace_flags;
} sva_vpp_layer;

/* The most layers one picture may have (vaRenderPicture answers VA_STATUS_ERROR_MAX_NUM_EXCEEDED). */
#define SVA_MAX_VPP_LAYERS 64

typedef struct sva_vpp {
    sva_vpp_layer *layers;      /* owned by the context; kept across pictures */
    unsigned num_layers, layers_cap;
    uint8_t *scratch;           /* a deinterlaced copy of a layer's surface; owned by the context */
    unsigned scratch_cap;
} sva_vpp;

/* H.264 state of a context, defined in softva_h264_decode.c and softva_h264_encode.c. */
typedef struct sva_h264_decoder sva_h264_decoder;
typedef struct sva_h264_encoder sva_h264_encoder;

typedef struct sva_context {
    VAContextID id;
    sva_config config;
    int width, height;
    VASurfaceID render_target;
    int in_picture;
    sva_jpeg_decode dec;
    sva_jpeg_encode enc;
    sva_vpp vpp;
    sva_h264_decoder *h264dec;  /* H.264 VLD contexts only */
    sva_h264_encoder *h264enc;  /* H.264 EncSlice/EncSliceLP contexts only */
} sva_context;

/* ---- Personality (device profile) ------------------------------------------------------- */

typedef struct sva_pair { VAProfile profile; VAEntrypoint entrypoint; } sva_pair;
typedef struct sva_attr { VAProfile profile; VAEntrypoint entrypoint; VAConfigAttribType type; uint32_t value; } sva_attr;

typedef struct sva_personality {
    int loaded;                 /* 0: native personality */
    char name[128];
    char vendor[512];
    char driver[64];
    char api[16];
    sva_pair *pairs; int num_pairs;
    sva_attr *attrs; int num_attrs;
    int init_failure;
    VAStatus init_status;
    char init_message[512];
} sva_personality;

/* Parses a .profile file. Returns 0, or -1 with a message in err. */
int sva_personality_load(const char *path, sva_personality *p, char *err, size_t err_len);
void sva_personality_free(sva_personality *p);
int sva_profile_from_name(const char *name, VAProfile *out);
int sva_entrypoint_from_name(const char *name, VAEntrypoint *out);
int sva_attrib_from_name(const char *name, VAConfigAttribType *out);
int sva_status_from_name(const char *name, VAStatus *out);
const char *sva_status_name(VAStatus s);

/* ---- Counters --------------------------------------------------------------------------- */

typedef struct sva_counters {
    uint64_t surfaces_created, surfaces_destroyed;
    uint64_t contexts_created, contexts_destroyed;
    /* Contexts alive now and the most alive at once, by kind (decode, encode, vpp). */
    uint64_t live_contexts[3], peak_live_contexts[3];
    uint64_t images_created, images_derived, images_mapped, derived_images_mapped;
    uint64_t get_image_calls, put_image_calls;
    uint64_t get_image_bytes, put_image_bytes, derived_map_bytes;
    uint64_t decodes, encodes, vpp_ops;
    uint64_t vpp_layers;        /* layers drawn by successful VPP pictures (vpp_ops counts pictures) */
    uint64_t vpp_deinterlaced;  /* layers of successful VPP pictures deinterlaced first (bob) */
    /* the same by codec: SVA_CODEC_JPEG, SVA_CODEC_H264 */
    uint64_t codec_decodes[2], codec_encodes[2];
    uint64_t coded_bytes;
    uint64_t end_pictures, injected_failures, failed_operations;
} sva_counters;

/* ---- Driver ----------------------------------------------------------------------------- */

typedef struct sva_driver {
    pthread_mutex_t lock;
    sva_table configs, contexts, surfaces, buffers, images;
    sva_personality personality;
    sva_counters counters;
    char counters_path[4096];
    long long fail_after;       /* -1: never */
    VAStatus fail_status;
    unsigned fail_ops;          /* SVA_OP_* mask the fault applies to */
    uint64_t frames_counted;    /* end-pictures of the kinds in fail_ops */
    int deinterlaces;           /* VAProcFilterDeinterlacing is offered (SOFTVA_VPP_FILTERS) */
    char vendor[600];
} sva_driver;

void sva_counters_write(sva_driver *drv);

/* JPEG, implemented with libjpeg(-turbo). Both return VA status codes. */
VAStatus sva_jpeg_decode_picture(sva_driver *drv, sva_context *ctx, sva_surface *target);
VAStatus sva_jpeg_encode_picture(sva_driver *drv, sva_context *ctx, sva_surface *source,
                                 sva_buffer *coded);

/* H.264 (softva_h264_decode.c, softva_h264_encode.c). */
enum { SVA_CODEC_JPEG = 0, SVA_CODEC_H264 = 1 };
int sva_profile_is_h264(VAProfile p);
VAStatus sva_h264_decoder_create(sva_context *ctx);
void sva_h264_decoder_destroy(sva_context *ctx);
void sva_h264_decode_begin(sva_context *ctx);
VAStatus sva_h264_decode_render(sva_context *ctx, sva_buffer *b);
VAStatus sva_h264_decode_picture(sva_driver *drv, sva_context *ctx, sva_surface *target);
VAStatus sva_h264_encoder_create(sva_context *ctx);
void sva_h264_encoder_destroy(sva_context *ctx);
void sva_h264_encode_begin(sva_context *ctx);
VAStatus sva_h264_encode_render(sva_context *ctx, sva_buffer *b);
/* Encodes the source surface into the coded buffer named by the picture parameters; *coded_bytes
 * gets the size written. */
VAStatus sva_h264_encode_picture(sva_driver *drv, sva_context *ctx, sva_surface *source, uint64_t *coded_bytes);

/* Grows the array *p (capacity *cap elements of elem bytes) to hold need elements, doubling;
 * 0 on success, -1 when out of memory (the array is then unchanged). */
int sva_grow(void **p, unsigned *cap, unsigned need, size_t elem);

#pragma GCC visibility pop

#endif
