// FFmpeg's headers, plus prefixed shims for what Swift cannot import: function-like macros
// (AVERROR, MKTAG) and constants whose definitions Swift's importer rejects.
#ifndef CFFMPEG_H
#define CFFMPEG_H

#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/dovi_meta.h>
#include <libavutil/error.h>
#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_vaapi.h>
#include <libavutil/imgutils.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

/// AVERROR(e): FFmpeg's negative error code for a POSIX errno value.
static inline int cffmpeg_averror(int errnum) { return AVERROR(errnum); }
/// AVERROR_EOF, which Swift imports only as an unevaluated macro.
static inline int cffmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }
/// AVERROR_INVALIDDATA.
static inline int cffmpeg_AVERROR_INVALIDDATA(void) { return AVERROR_INVALIDDATA; }
/// AVERROR_DECODER_NOT_FOUND.
static inline int cffmpeg_AVERROR_DECODER_NOT_FOUND(void) { return AVERROR_DECODER_NOT_FOUND; }
/// AVERROR_ENCODER_NOT_FOUND.
static inline int cffmpeg_AVERROR_ENCODER_NOT_FOUND(void) { return AVERROR_ENCODER_NOT_FOUND; }
/// AV_NOPTS_VALUE: the "no timestamp" sentinel (INT64_MIN, written as a cast macro).
static inline int64_t cffmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }
/// AV_TIME_BASE_Q, a compound literal Swift cannot import.
static inline AVRational cffmpeg_AV_TIME_BASE_Q(void) { return AV_TIME_BASE_Q; }
/// AV_ERROR_MAX_STRING_SIZE.
static inline int cffmpeg_AV_ERROR_MAX_STRING_SIZE(void) { return AV_ERROR_MAX_STRING_SIZE; }

/// glibc's mallopt(M_MMAP_THRESHOLD): <malloc.h> is not in Swift's Glibc module.
#include <malloc.h>
static inline int cffmpeg_set_mmap_threshold(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }

#endif
