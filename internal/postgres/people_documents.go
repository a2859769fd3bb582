package postgres

import (
	"context"

	"github.com/jmoiron/sqlx"

	"emi/internal/emi"
)

// Documents of users, KYC sessions, companies and members
// (people.DocumentStore), their content sealed at rest.

// InsertDocument implements people.DocumentStore.
func (s *PeopleStore) InsertDocument(ctx context.Context, d emi.StoredDocument, enc []byte) error {
	_, err := s.db.Ext(ctx).ExecContext(ctx, `INSERT INTO documents (token, partner_id, owner_type, owner_token,
		document_type, file_type, content_type, size, sha256, content_enc, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		d.Token, d.PartnerID, d.OwnerType, d.OwnerToken, d.DocumentType, d.FileType, d.ContentType, d.Size, d.SHA256, enc, d.CreatedAt)
	return Translate(err)
}

const documentColumns = `token, partner_id, owner_type, owner_token, document_type, file_type, content_type, size, sha256, created_at`

// Documents implements people.DocumentStore.
func (s *PeopleStore) Documents(ctx context.Context, ownerType, ownerToken string) ([]emi.StoredDocument, error) {
	var out []emi.StoredDocument
	err := sqlx.SelectContext(ctx, s.db.Ext(ctx), &out, `SELECT `+documentColumns+` FROM documents
		WHERE owner_type = $1 AND owner_token = $2 ORDER BY created_at, token`, ownerType, ownerToken)
	return out, Translate(err)
}

// Document implements people.DocumentStore.
func (s *PeopleStore) Document(ctx context.Context, token string) (emi.StoredDocument, []byte, error) {
	var row struct {
		emi.StoredDocument
		Enc []byte `db:"content_enc"`
	}
	if !validUUID(token) {
		return emi.StoredDocument{}, nil, emi.ErrDocumentNotFound
	}
	err := sqlx.GetContext(ctx, s.db.Ext(ctx), &row, `SELECT `+documentColumns+`, content_enc FROM documents WHERE token = $1`, token)
	if err != nil {
		return emi.StoredDocument{}, nil, NotFound(err, emi.ErrDocumentNotFound)
	}
	return row.StoredDocument, row.Enc, nil
}
