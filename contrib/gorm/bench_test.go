package frondgorm_test

import (
	"testing"

	frondgorm "github.com/frond-id/frond/contrib/gorm"
)

// AutoRow is the same row with the database's own auto-increment key.
type AutoRow struct {
	ID   int64 `gorm:"primaryKey;autoIncrement"`
	Item string
}

// FrondRow takes its key from frond (the leasing client, in process).
type FrondRow struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false" frond:"segment:order"`
	Item string
}

// The cost of an insert with a frond ID against the same insert with the
// database's auto-increment, in the same run, on each database:
//
//	go test -run '^$' -bench Insert -benchtime 3000x -count 5 ./contrib/gorm
func BenchmarkInsert(b *testing.B) {
	for name, d := range databases(b) {
		b.Run(name, func(b *testing.B) {
			_, c := server(b)
			db := open(b, d, c, frondgorm.Options{}, &AutoRow{}, &FrondRow{})
			b.Run("autoincrement", func(b *testing.B) {
				for b.Loop() {
					if err := db.Create(&AutoRow{Item: "tea"}).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("frond", func(b *testing.B) {
				for b.Loop() {
					if err := db.Create(&FrondRow{Item: "tea"}).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
