package frondgorm_test

import (
	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/frond-id/frond"
	"github.com/frond-id/frond/client"
	frondgorm "github.com/frond-id/frond/contrib/gorm"
)

// useGORM is docs/integrations.md's GORM snippet, word for word (the root
// package's TestDocs_GoSnippetsAreCode checks that it is here): compiled by
// go test, not run (it needs its servers).
func useGORM(dsn string) error {
	ids, err := client.New(client.Options{Servers: []string{"id-1:9090", "id-2:9090"}})
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{})
	db.Use(frondgorm.New(ids, frondgorm.Options{}))

	type Order struct {
		ID     frond.ID `gorm:"primaryKey;autoIncrement:false" frond:"segment:order"`
		Number frond.ID `frond:"segment:invoice"` // any integer field, not only keys
		Event  int64    `frond:"snowflake"`       // snowflake IDs
		Item   string
	}

	db.Create(&Order{Item: "tea"})                // ID, Number and Event filled
	db.Create(&[]Order{{Item: "a"}, {Item: "b"}}) // one call per source for the slice
	return err
}

var _ = useGORM
