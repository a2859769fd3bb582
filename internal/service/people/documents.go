package people

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"

	"github.com/gabriel-vasile/mimetype"

	"emi/internal/emi"
	"emi/internal/service/kernel"
)

// DocumentStore keeps documents: metadata readable, content sealed.
type DocumentStore interface {
	InsertDocument(ctx context.Context, d emi.StoredDocument, contentEnc []byte) error
	Documents(ctx context.Context, ownerType, ownerToken string) ([]emi.StoredDocument, error)
	// Document returns the document and its sealed content.
	// Returns emi.ErrDocumentNotFound.
	Document(ctx context.Context, token string) (emi.StoredDocument, []byte, error)
}

// fileTypeMIME is the content type the content of each seed file_type must
// sniff as (gabriel-vasile/mimetype, which reads the magic bytes). xlxs is
// the seed's spelling of xlsx.
var fileTypeMIME = map[string]string{
	"pdf":  "application/pdf",
	"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"xlxs": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"jpg":  "image/jpeg",
	"jpeg": "image/jpeg",
	"png":  "image/png",
	"mov":  "video/quicktime",
	"mp4":  "video/mp4",
}

// DecodedDocument is a document checked and ready to seal.
type DecodedDocument struct {
	emi.Document
	content     []byte
	contentType string
}

// maxEncodedDocument is the longest base64 text that can decode within
// emi.MaxDocumentBytes, plus room for line breaks; longer text is refused
// before any decoding.
const maxEncodedDocument = (emi.MaxDocumentBytes+2)/3*4 + emi.MaxDocumentBytes/38

// DecodeDocuments decodes and checks every document of a request (field
// path prefix, e.g. "documents"): base64, size 1 byte to 10 MiB decoded, and
// content that sniffs as the declared file_type. It returns every problem.
func DecodeDocuments(prefix string, docs []emi.Document) ([]DecodedDocument, []emi.FieldError) {
	var out []DecodedDocument
	var bad []emi.FieldError
	for i, d := range docs {
		path := prefix + "[" + strconv.Itoa(i) + "]"
		dd, fe := DecodeDocument(path, d)
		if fe != nil {
			bad = append(bad, *fe)
			continue
		}
		out = append(out, dd)
	}
	return out, bad
}

// DecodeDocument checks one uploaded document (base64, size, sniffed
// type) at path and returns it decoded, or the field error.
func DecodeDocument(path string, d emi.Document) (DecodedDocument, *emi.FieldError) {
	fail := func(field, msg string) (DecodedDocument, *emi.FieldError) {
		return DecodedDocument{}, &emi.FieldError{Field: emi.JoinField(path, field), Message: msg}
	}
	want, ok := fileTypeMIME[d.FileType]
	if !ok {
		return fail("file_type", "must be one of: "+strings.Join(emi.FileTypes, ", "))
	}
	if len(d.File) > maxEncodedDocument {
		return fail("file", "must be at most 10 MiB once decoded")
	}
	content, err := base64.StdEncoding.DecodeString(d.File)
	if err != nil {
		return fail("file", "must be standard base64")
	}
	if len(content) == 0 {
		return fail("file", "must not be empty")
	}
	if len(content) > emi.MaxDocumentBytes {
		return fail("file", "must be at most 10 MiB once decoded")
	}
	got := SniffContent(content)
	if !sniffedAs(content, want) {
		return fail("file", "content is "+got+", which does not match file_type "+d.FileType)
	}
	if msg := overPixelBudget(content, want); msg != "" {
		return fail("file", msg)
	}
	return DecodedDocument{Document: d, content: content, contentType: want}, nil
}

// MaxImagePixels is the largest image (width × height) emi accepts: 40
// megapixels, more than any phone camera's photo of an identity document. A
// small file can declare a huge image (a 60,000 × 60,000 PNG of one colour
// compresses to a few kilobytes and decodes to 14 GB of pixels: a
// decompression bomb for whatever decodes it later).
const MaxImagePixels = 40_000_000

// overPixelBudget reads only the header of a JPEG or PNG
// (image.DecodeConfig, never the pixels) and returns why it is refused
// when it declares more than MaxImagePixels; "" otherwise. A header that
// does not parse is left to the magic-byte check (nothing can decode its
// pixels either).
func overPixelBudget(content []byte, contentType string) string {
	var cfg image.Config
	var err error
	switch contentType {
	case "image/jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(content))
	case "image/png":
		cfg, err = png.DecodeConfig(bytes.NewReader(content))
	default:
		return ""
	}
	if err != nil {
		return ""
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxImagePixels {
		return fmt.Sprintf("image is %d × %d pixels: at most %d megapixels are accepted", cfg.Width, cfg.Height, MaxImagePixels/1_000_000)
	}
	return ""
}

// SniffContent returns the content type the magic bytes of b show.
func SniffContent(b []byte) string { return mimetype.Detect(b).String() }

// sniffedAs reports whether b's magic bytes show content type want, or a
// type derived from it (mimetype's tree: e.g. an MP4 brand under video/mp4).
func sniffedAs(b []byte, want string) bool {
	for m := mimetype.Detect(b); m != nil; m = m.Parent() {
		if m.Is(want) {
			return true
		}
	}
	return false
}

// DocumentContext binds a document's sealed content to its row.
func DocumentContext(token string) string { return "documents.content:" + token }

// StoreDocuments seals and inserts checked documents for an owner.
func StoreDocuments(ctx context.Context, store DocumentStore, sealer kernel.Sealer, partnerID, ownerType, ownerToken string, docs []DecodedDocument, now kernel.Clock) ([]emi.StoredDocument, error) {
	out := make([]emi.StoredDocument, 0, len(docs))
	for _, d := range docs {
		sum := sha256.Sum256(d.content)
		sd := emi.StoredDocument{
			Token: kernel.NewToken(), PartnerID: partnerID, OwnerType: ownerType, OwnerToken: ownerToken,
			DocumentType: d.DocumentType, FileType: d.FileType, ContentType: d.contentType,
			Size: len(d.content), SHA256: sum[:], CreatedAt: now().UTC(),
		}
		enc, err := sealer.Seal(d.content, DocumentContext(sd.Token))
		if err != nil {
			return nil, emi.Internal(err)
		}
		if err := store.InsertDocument(ctx, sd, enc); err != nil {
			return nil, err
		}
		out = append(out, sd)
	}
	return out, nil
}
